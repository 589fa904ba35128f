package main

import (
	"fmt"
	"os/exec"
	"slices"
	"strconv"
)

// quotaBytesPerSec is the producer_byte_rate of the quota scenario.
const quotaBytesPerSec = 1 << 20

// measureQuota measures a producer limited by producer_byte_rate: the
// quota is set for the perf tool's client id, a warm-up run spends the
// allowance a fresh quota window grants at once (Kafka measures over at
// least quota.window.num-1 windows, so the first bytes look slow), and
// the measured run's MB/s is what the quota lets through in the long run.
func measureQuota(e env, b *broker, s scenario) (measurement, error) {
	out, err := exec.Command(e.vltava, "configs", "alter", "--entity-type", "clients", "--entity-name", "vltava-cli",
		"--set", "producer_byte_rate="+strconv.Itoa(quotaBytesPerSec), "--bootstrap-server", b.addr).CombinedOutput()
	if err != nil {
		return measurement{}, fmt.Errorf("setting the quota: %v: %s", err, out)
	}
	args := func(records int64) []string {
		return []string{"produce", "bench", "--num-records", strconv.FormatInt(records, 10), "--record-size", strconv.Itoa(s.recordSize),
			"--acks", s.acks, "--compression", s.compression, "--partitions", strconv.Itoa(s.partitions)}
	}
	// The warm-up: ten seconds' worth, what the default window (11 × 1 s)
	// lets through before the first throttle.
	if _, err := perf(e, b, args(max(s.records/4, 1000))...); err != nil {
		return measurement{}, err
	}
	cpu0 := b.cpuSeconds()
	rep, err := perf(e, b, args(s.records)...)
	if err != nil {
		return measurement{}, err
	}
	m := fromReport(rep)
	m.cpuSeconds = b.cpuSeconds() - cpu0
	return m, nil
}

// minMax is the smallest (or largest) MB/s of the successful runs.
func minMax(ms []measurement, largest bool) float64 {
	var vals []float64
	for _, m := range ms {
		if m.ok {
			vals = append(vals, m.mbPerSec)
		}
	}
	if len(vals) == 0 {
		return 0
	}
	if largest {
		return slices.Max(vals)
	}
	return slices.Min(vals)
}
