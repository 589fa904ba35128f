package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Names of the metrics measurements, matched by -only like the scenarios.
const (
	metricsProduceName = "metrics on vs off: produce 100B acks=1 p=1"
	metricsScrapeName  = "metrics: /metrics scrape, 10000 partitions"
)

// metricsSection measures what the metrics cost Vltava (docs/PERFORMANCE.md):
// produce with metrics.enable=true against metrics.enable=false, in pairs
// whose order alternates (on, off, off, on, …) so a machine whose load
// drifts during the run favours neither; and a scrape of /metrics on a node
// hosting 10,000 partitions. It writes its rows through w and returns the
// number of failed runs.
func metricsSection(e env, nruns int, w func(string, ...any)) int {
	failed := 0
	if *only == "" || strings.Contains(metricsProduceName, *only) {
		w("\n## Metrics cost (%d pair(s), order alternating)\n\n", nruns)
		w("| measurement | metrics on | metrics off | on/off (paired median) | CPU µs/rec on | CPU µs/rec off | CPU on/off (paired median) |\n|---|---|---|---|---|---|---|\n")
		records := int64(2_000_000)
		if *smoke {
			records = 20_000
		}
		var on, off []measurement
		for i := 0; i < nruns; i++ {
			order := []bool{true, false}
			if i%2 == 1 {
				order = []bool{false, true}
			}
			for _, enabled := range order {
				m := measureMetricsProduce(e, enabled, records, i)
				if !m.ok {
					failed++
				}
				if enabled {
					on = append(on, m)
				} else {
					off = append(off, m)
				}
			}
		}
		var tput, cpu []float64
		for i := range on {
			if on[i].ok && off[i].ok && off[i].recPerSec > 0 && off[i].cpuMicrosPerRecord() > 0 {
				tput = append(tput, on[i].recPerSec/off[i].recPerSec)
				cpu = append(cpu, on[i].cpuMicrosPerRecord()/off[i].cpuMicrosPerRecord())
			}
		}
		w("| %s | %s | %s | %.3f | %.3f | %.3f | %.3f |\n", metricsProduceName, recRate(on), recRate(off), medianOr0(tput),
			medianOr0(cpuPerRec(on)), medianOr0(cpuPerRec(off)), medianOr0(cpu))
	}
	if *only == "" || strings.Contains(metricsScrapeName, *only) {
		parts, scrapes := 10_000, 10
		if *smoke {
			parts, scrapes = 100, 3
		}
		r, err := measureScrape(e, parts, scrapes)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: FAILED: %v\n", metricsScrapeName, err)
			failed++
			w("\n%s: failed (%v)\n", metricsScrapeName, err)
			return failed
		}
		w("\n| measurement | partitions | scrape ms median (min–max) | MB of text | MB allocated between scrapes, median |\n|---|---|---|---|---|\n")
		w("| %s | %d | %.1f (%.1f–%.1f) | %.1f | %.1f |\n", metricsScrapeName, parts, medianOr0(r.ms), slices.Min(r.ms), slices.Max(r.ms), r.textMB, medianOr0(r.allocMB))
	}
	return failed
}

// measureMetricsProduce is one produce run on a fresh broker with
// metrics.enable set as given.
func measureMetricsProduce(e env, enabled bool, records int64, i int) (m measurement) {
	defer func() {
		if *verbose || !m.ok {
			fmt.Fprintf(os.Stderr, "bench: %s metrics.enable=%v run %d: ok=%v %s (%.0f rec/s, %.2fs cpu)\n",
				metricsProduceName, enabled, i+1, m.ok, m.err, m.recPerSec, m.cpuSeconds)
		}
	}()
	dir, err := os.MkdirTemp(e.base, "metrics-")
	if err != nil {
		return measurement{err: err.Error()}
	}
	defer os.RemoveAll(dir)
	b, _, err := startBroker(e, "vltava", dir, freePort(), "num.partitions=1", "metrics.enable="+strconv.FormatBool(enabled))
	if err != nil {
		return measurement{err: err.Error()}
	}
	defer b.stop()
	cpu0 := b.cpuSeconds()
	rep, err := perf(e, b, "produce", "bench", "--num-records", strconv.FormatInt(records, 10), "--record-size", "100",
		"--acks", "1", "--compression", "none", "--partitions", "1")
	if err != nil {
		return measurement{err: err.Error()}
	}
	m = fromReport(rep)
	m.cpuSeconds = b.cpuSeconds() - cpu0
	m.ok = true
	return m
}

// scrapeResult is the scrapes of one node.
type scrapeResult struct {
	ms, allocMB []float64
	textMB      float64
}

// measureScrape starts a node with its admin listener, creates a topic of
// parts partitions, and times n scrapes of /metrics (after one to warm
// up). The allocation of a scrape is the growth of the node's
// go_memstats_alloc_bytes_total from one scrape to the next: the scrape's
// own allocation plus whatever the idle node allocated in between.
func measureScrape(e env, parts, n int) (scrapeResult, error) {
	var r scrapeResult
	dir, err := os.MkdirTemp(e.base, "scrape-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	admin := fmt.Sprintf("127.0.0.1:%d", freePort())
	b, _, err := startBroker(e, "vltava", dir, freePort(), "admin.listeners=http://"+admin)
	if err != nil {
		return r, err
	}
	defer b.stop()
	if out, err := exec.Command(e.vltava, "topics", "create", "many", "--partitions", strconv.Itoa(parts),
		"--bootstrap-server", b.addr).CombinedOutput(); err != nil {
		return r, fmt.Errorf("topics create: %v: %s", err, out)
	}
	cl := &http.Client{Timeout: 30 * time.Second}
	scrape := func() (time.Duration, []byte, error) {
		start := time.Now()
		resp, err := cl.Get("http://" + admin + "/metrics")
		if err != nil {
			return 0, nil, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return 0, nil, fmt.Errorf("/metrics: %d", resp.StatusCode)
		}
		return time.Since(start), body, err
	}
	_, body, err := scrape()
	if err != nil {
		return r, err
	}
	if got := bytes.Count(body, []byte(`kafka_log_log_logendoffset{topic="many"`)); got != parts {
		return r, fmt.Errorf("the scrape has %d kafka_log_log_logendoffset series of the topic, want %d", got, parts)
	}
	prev := allocTotal(body)
	for range n {
		took, body, err := scrape()
		if err != nil {
			return r, err
		}
		now := allocTotal(body)
		r.ms = append(r.ms, float64(took.Microseconds())/1000)
		r.allocMB = append(r.allocMB, (now-prev)/1e6)
		r.textMB = float64(len(body)) / 1e6
		prev = now
	}
	return r, nil
}

// allocTotal is go_memstats_alloc_bytes_total in a scrape.
func allocTotal(body []byte) float64 {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_alloc_bytes_total "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// recRate is the median records/s of the successful runs, with min–max.
func recRate(ms []measurement) string {
	var v []float64
	for _, m := range ms {
		if m.ok {
			v = append(v, m.recPerSec)
		}
	}
	if len(v) == 0 {
		return "failed"
	}
	return fmt.Sprintf("%.0f (%.0f–%.0f)", medianOr0(v), slices.Min(v), slices.Max(v))
}

func cpuPerRec(ms []measurement) []float64 {
	var v []float64
	for _, m := range ms {
		if m.ok {
			v = append(v, m.cpuMicrosPerRecord())
		}
	}
	return v
}

// medianOr0 is median, 0 when every run failed.
func medianOr0(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return median(v)
}
