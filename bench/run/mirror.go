package main

// The MirrorMaker scenarios, between two local Vltava nodes: mirror
// throughput (1 KiB records preloaded on A, timed until `vltava mirror` has
// copied them all to B) against the ceiling, a plain franz-go
// consume+produce loop copying the same records on the same machine, the
// two alternating run by run; and replication lag at a fixed 10,000
// records/s (the record's timestamp, kept by the mirror, against the time
// a consumer on B receives it).

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const mirrorSectionName = "mirror-1k"

func mirrorSection(e env, nruns int, w func(string, ...any)) int {
	if *only != "" && !strings.Contains(mirrorSectionName, *only) {
		return 0
	}
	records := 500_000
	lagSeconds := 20
	if *smoke {
		records, lagSeconds = 20_000, 3
	}
	w("\n## MirrorMaker (%d run(s), order alternating; %d records of 1 KiB, 4 partitions)\n\n", nruns, records)
	w("| run | franz-go consume+produce loop MB/s | vltava mirror MB/s, from exec | mirror/loop | mirror start-up s | vltava mirror MB/s, first record to last | mirror/loop | exactly-once mirror MB/s, first record to last | exactly-once/loop | offset-preserving mirror MB/s, first record to last | preserving/loop |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	failed := 0
	var ratios, steadyRatios, eosRatios, keepRatios []float64
	for i := 0; i < nruns; i++ {
		r, err := measureMirror(e, records, i)
		if err != nil {
			w("| %d | failed: %v | | | | | | | | | |\n", i+1, err)
			failed++
			continue
		}
		ratios = append(ratios, r.mirror/r.loop)
		if r.steady > 0 {
			steadyRatios = append(steadyRatios, r.steady/r.loop)
		}
		if r.eos > 0 {
			eosRatios = append(eosRatios, r.eos/r.loop)
		}
		if r.preserve > 0 {
			keepRatios = append(keepRatios, r.preserve/r.loop)
		}
		w("| %d | %.1f | %.1f | %.2f | %.2f | %.1f | %.2f | %.1f | %.2f | %.1f | %.2f |\n", i+1, r.loop, r.mirror, r.mirror/r.loop, r.startup.Seconds(), r.steady, r.steady/r.loop, r.eos, r.eos/r.loop, r.preserve, r.preserve/r.loop)
	}
	if len(ratios) > 0 {
		w("\nMedian mirror/loop: %.2f from exec, %.2f from the first record on B; exactly-once %.2f, offset-preserving %.2f from the first record on B.\n", median(ratios), medianOrZero(steadyRatios), medianOrZero(eosRatios), medianOrZero(keepRatios))
	}
	p50, p99, err := measureMirrorLag(e, lagSeconds)
	if err != nil {
		w("\nLag at 10,000 records/s: failed: %v\n", err)
		failed++
	} else {
		w("\nReplication lag at 10,000 records/s for %d s (record timestamp on A to receipt on B): p50 %.0f ms, p99 %.0f ms.\n", lagSeconds, p50, p99)
	}
	return failed
}

// twoNodes starts A and B.
func twoNodes(e env, name string) (a, b *broker, err error) {
	dir := filepath.Join(e.base, name)
	a, _, err = startBroker(e, "vltava", filepath.Join(dir, "a"), freePort(), "schema.registry.listeners=")
	if err != nil {
		return nil, nil, err
	}
	b, _, err = startBroker(e, "vltava", filepath.Join(dir, "b"), freePort(), "schema.registry.listeners=")
	if err != nil {
		a.kill()
		return nil, nil, err
	}
	return a, b, nil
}

func preload(addr, topic string, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx := context.Background()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 4, 1, nil, topic); err != nil {
		return err
	}
	val := make([]byte, 1024)
	errs := make(chan error, 1)
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: val}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func endTotal(adm *kadm.Client, topic string) int64 {
	ends, err := adm.ListEndOffsets(context.Background(), topic)
	if err != nil {
		return 0
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			n += o.Offset
		}
	})
	return n
}

// medianOrZero is the median, 0 for no values.
func medianOrZero(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return median(v)
}

// copyRate is the MB/s of the n-first records copied in d; 0 when the first
// poll already found them all (a smoke run's few records), which the
// report leaves out of the medians.
func copyRate(n int, first int64, d time.Duration) float64 {
	if first >= int64(n) || d <= 0 {
		return 0
	}
	return float64(int64(n)-first) * 1024 / 1e6 / d.Seconds()
}

// committedTotal is the sum of a topic's last stable offsets.
func committedTotal(adm *kadm.Client, topic string) int64 {
	ends, err := adm.ListCommittedOffsets(context.Background(), topic)
	if err != nil {
		return 0
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			n += o.Offset
		}
	})
	return n
}

// copyLoop is the ceiling: consume A's topic, produce each record to B.
func copyLoop(a, b, topic string, n int) (time.Duration, error) {
	cons, err := kgo.NewClient(kgo.SeedBrokers(a), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, err
	}
	defer cons.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(b), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(50000))
	if err != nil {
		return 0, err
	}
	defer prod.Close()
	ctx := context.Background()
	if _, err := kadm.NewClient(prod).CreateTopic(ctx, 4, 1, nil, "copy."+topic); err != nil {
		return 0, err
	}
	start := time.Now()
	for got := 0; got < n; {
		fs := cons.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			got++
			prod.Produce(ctx, &kgo.Record{Topic: "copy." + topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}, nil)
		})
	}
	if err := prod.Flush(ctx); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// mm2Bench writes an mm2.properties mirroring cluster a, named alias, to b.
func mm2Bench(dir, alias, a, b string, extra ...string) (string, error) {
	lines := append([]string{"clusters = " + alias + ", B", alias + ".bootstrap.servers = " + a, "B.bootstrap.servers = " + b, alias + "->B.enabled = true",
		"replication.factor = 1", "offset-syncs.topic.replication.factor = 1", "checkpoints.topic.replication.factor = 1",
		"heartbeats.topic.replication.factor = 1", "offset.storage.replication.factor = 1", "offset.flush.interval.ms = 1000"}, extra...)
	p := filepath.Join(dir, "mm2.properties")
	return p, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// mirrorRun is one run's figures: the loop's MB/s, the mirror's from its
// exec and from its first record on B, and its start-up (exec to the first
// record on B).
type mirrorRun struct {
	loop, mirror, steady float64
	eos                  float64 // exactly.once.source.support=enabled, first record to last
	preserve             float64 // vltava.preserve.offsets=true, first record to last
	startup              time.Duration
}

// measureMirror measures the loop and the mirror, the order alternating
// with i.
func measureMirror(e env, n, i int) (r mirrorRun, err error) {
	a, b, err := twoNodes(e, fmt.Sprintf("mirror-%d", i))
	if err != nil {
		return r, err
	}
	defer a.kill()
	defer b.kill()
	if err := preload(a.addr, "bench", n); err != nil {
		return r, err
	}
	mb := float64(n) * 1024 / 1e6
	loop := func() error {
		d, err := copyLoop(a.addr, b.addr, "bench", n)
		r.loop = mb / d.Seconds()
		return err
	}
	mirror := func() error {
		d, first, firstAt, err := runMirrorUntil(e, a.addr, b.addr, "A.bench", int64(n), "emit.checkpoints.enabled = false", "sync.topic.acls.enabled = false")
		r.mirror, r.startup = mb/d.Seconds(), firstAt
		// From the first poll that saw records on B: the records already
		// there by then are not counted.
		r.steady = copyRate(n, first, d-firstAt)
		return err
	}
	eos := func() error {
		// Into a second remote topic on B, as C->B.
		d, first, firstAt, err := runMirrorUntil(e, a.addr, b.addr, "C.bench", int64(n), "emit.checkpoints.enabled = false", "sync.topic.acls.enabled = false",
			"exactly.once.source.support = enabled")
		r.eos = copyRate(n, first, d-firstAt)
		return err
	}
	preserve := func() error {
		// Into a third remote topic on B, as P->B, at A's offsets.
		d, first, firstAt, err := runMirrorUntil(e, a.addr, b.addr, "P.bench", int64(n), "emit.checkpoints.enabled = false", "sync.topic.acls.enabled = false",
			"vltava.preserve.offsets = true")
		r.preserve = copyRate(n, first, d-firstAt)
		return err
	}
	steps := []func() error{loop, mirror, eos, preserve}
	if i%2 == 1 {
		slices.Reverse(steps)
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return r, fmt.Errorf("%w%s%s", err, exitNote("A", a), exitNote("B", b))
		}
	}
	return r, nil
}

// exitNote is the end of a broker's log if its process has exited, so a
// failed run says why.
func exitNote(name string, b *broker) string {
	// Not yet waited for, an exited broker is a zombie: ask /proc.
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.cmd.Process.Pid))
	if _, after, ok := strings.Cut(string(stat), ") "); err == nil && ok && !strings.HasPrefix(after, "Z") {
		return ""
	}
	out := b.log.String()
	if len(out) > 3000 {
		out = out[len(out)-3000:]
	}
	return fmt.Sprintf("; cluster %s exited: %s", name, out)
}

// runMirrorUntil starts `vltava mirror` and times it from the process's
// start until the remote topic holds want records; first is the number of
// records the first poll that found any saw, at firstAt after the start.
func runMirrorUntil(e env, a, b, remote string, want int64, extra ...string) (d time.Duration, first int64, firstAt time.Duration, err error) {
	alias, _, _ := strings.Cut(remote, ".")
	dir, err := os.MkdirTemp(e.base, "mm2-")
	if err != nil {
		return 0, 0, 0, err
	}
	cfg, err := mm2Bench(dir, alias, a, b, extra...)
	if err != nil {
		return 0, 0, 0, err
	}
	cmd := exec.Command(e.vltava, "mirror", "--config", cfg, "--log-level", "warn")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	// A short metadata age: the remote topic does not exist yet, and
	// franz-go would otherwise take the answer saying so as good for 5 s.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b), kgo.MetadataMinAge(10*time.Millisecond), kgo.MetadataMaxAge(100*time.Millisecond))
	if err != nil {
		return 0, 0, 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := cl.Ping(context.Background()); err != nil {
		return 0, 0, 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, 0, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	deadline := start.Add(10 * time.Minute)
	// An exactly-once mirror's records count once committed: its last
	// stable offsets (which also count its transaction markers, one per
	// partition and transaction: well under 1 % of the records here).
	eos := slices.Contains(extra, "exactly.once.source.support = enabled")
	for {
		n := endTotal(adm, remote)
		if eos {
			n = committedTotal(adm, remote)
		}
		if n > 0 && first == 0 {
			first, firstAt = n, time.Since(start)
		}
		if n >= want {
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, 0, fmt.Errorf("mirror did not copy %d records: %s", want, lastLine(logs.String()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start), first, firstAt, nil
}

// measureMirrorLag produces at 10,000 records/s on A for seconds and
// measures, on B, receipt time minus the record's timestamp.
func measureMirrorLag(e env, seconds int) (p50, p99 float64, err error) {
	a, b, err := twoNodes(e, "mirror-lag")
	if err != nil {
		return 0, 0, err
	}
	defer a.kill()
	defer b.kill()
	if err := preload(a.addr, "lag", 1); err != nil {
		return 0, 0, err
	}
	dir, err := os.MkdirTemp(e.base, "mm2-lag-")
	if err != nil {
		return 0, 0, err
	}
	cfg, err := mm2Bench(dir, "A", a.addr, b.addr, "emit.checkpoints.enabled = false", "sync.topic.acls.enabled = false")
	if err != nil {
		return 0, 0, err
	}
	cmd := exec.Command(e.vltava, "mirror", "--config", cfg, "--log-level", "warn")
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	cons, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumeTopics("A.lag"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		return 0, 0, err
	}
	defer cons.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(a.addr), kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		return 0, 0, err
	}
	defer prod.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	total := 10_000 * seconds
	go func() {
		val := make([]byte, 1024)
		tick := time.NewTicker(10 * time.Millisecond) // 100 records every 10 ms
		defer tick.Stop()
		for sent := 0; sent < total && ctx.Err() == nil; sent += 100 {
			<-tick.C
			for j := 0; j < 100; j++ {
				prod.Produce(ctx, &kgo.Record{Topic: "lag", Value: val}, nil)
			}
		}
	}()
	var lags []float64
	deadline := time.Now().Add(time.Duration(seconds)*time.Second + 2*time.Minute)
	for len(lags) < total+1 && time.Now().Before(deadline) {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := cons.PollFetches(pctx)
		pcancel()
		now := time.Now()
		fs.EachRecord(func(r *kgo.Record) {
			if r.Timestamp.After(started) { // not the record preloaded to create the topic
				lags = append(lags, float64(now.Sub(r.Timestamp).Microseconds())/1000)
			}
		})
	}
	if len(lags) < total {
		return 0, 0, fmt.Errorf("received %d of %d records on B", len(lags), total)
	}
	slices.Sort(lags)
	return lags[len(lags)/2], lags[len(lags)*99/100], nil
}
