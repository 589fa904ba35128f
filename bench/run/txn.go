package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The transaction scenarios: franz-go's transactional producer writing
// 1 KiB records and committing every 100 ms or every 1,000 records, with
// the same producer without transactions (idempotent, acks=all) measured
// first on the same broker process so that the transactional/idempotent
// ratio is paired; and a read_committed consumer reading transactional
// data back. The client runs in this process (the perf tool has no commit
// latency to report): throughput is records acknowledged per second of
// the whole run, commit latency the time EndTransaction takes once the
// transaction's records are flushed (the EndTxn round trip, and with
// transaction.version 2 the wait for the markers before the next
// transaction may start).

// txnParams says how a "txn" scenario commits or reads.
type txnParams struct {
	commitEvery   time.Duration // commit when the transaction is this old
	commitRecords int           // or has this many records
	readCommitted bool          // consume read_committed instead of producing
	rate          int           // records/s, paced (0: as fast as acknowledged)
}

// txnScenarioParams are the "txn" scenarios by name.
var txnScenarioParams = map[string]txnParams{
	"txn produce 1KiB commit/100ms p=1":     {commitEvery: 100 * time.Millisecond},
	"txn produce 1KiB commit/1000 recs p=1": {commitRecords: 1000},
	// Unpaced, a run commits every 100 ms only a few times: the commit
	// latency of that policy is measured paced, 100 commits in 10 s.
	"txn produce 1KiB commit/100ms @20k/s p=1": {commitEvery: 100 * time.Millisecond, rate: 20_000},
	"txn consume 1KiB read_committed p=1":      {readCommitted: true, commitRecords: 1000},
}

// txnScenarios are registered in scenarios().
func txnScenarios() []scenario {
	var ss []scenario
	for _, name := range []string{"txn produce 1KiB commit/100ms p=1", "txn produce 1KiB commit/1000 recs p=1",
		"txn produce 1KiB commit/100ms @20k/s p=1", "txn consume 1KiB read_committed p=1"} {
		n := int64(1_000_000)
		if r := txnScenarioParams[name].rate; r > 0 {
			n = int64(r) * 10
		}
		ss = append(ss, scenario{name: name, kind: "txn", recordSize: 1024, records: n, acks: "all", compression: "none", partitions: 1})
	}
	return ss
}

// measureTxn runs a "txn" scenario against broker b.
func measureTxn(b *broker, s scenario) (measurement, error) {
	p, ok := txnScenarioParams[s.name]
	if !ok {
		return measurement{}, fmt.Errorf("no transaction parameters for scenario %q", s.name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		return measurement{}, err
	}
	defer adm.Close()
	for _, topic := range []string{"bench-warmup", "bench-idempotent", "bench-txn"} {
		if _, err := kadm.NewClient(adm).CreateTopic(ctx, int32(s.partitions), 1, nil, topic); err != nil {
			return measurement{}, fmt.Errorf("creating %s: %w", topic, err)
		}
	}
	// A first transaction creates __transaction_state and loads the
	// coordinator: not part of the measurement.
	if _, err := txnProduce(ctx, b.addr, "bench-warmup", "warm-up", 10, s.recordSize, p); err != nil {
		return measurement{}, fmt.Errorf("warm-up transaction: %w", err)
	}

	if p.readCommitted {
		if _, err := txnProduce(ctx, b.addr, "bench-txn", "bench", s.records, s.recordSize, p); err != nil {
			return measurement{}, err
		}
		cpu0 := b.cpuSeconds()
		rate, err := consumeCommitted(ctx, b.addr, "bench-txn", s.records)
		if err != nil {
			return measurement{}, err
		}
		return measurement{records: s.records, recPerSec: rate, mbPerSec: rate * float64(s.recordSize) / 1e6, cpuSeconds: b.cpuSeconds() - cpu0}, nil
	}

	idem, err := txnProduce(ctx, b.addr, "bench-idempotent", "", s.records, s.recordSize, p)
	if err != nil {
		return measurement{}, fmt.Errorf("idempotent: %w", err)
	}
	log0 := b.log.Len()
	cpu0 := b.cpuSeconds()
	res, err := txnProduce(ctx, b.addr, "bench-txn", "bench", s.records, s.recordSize, p)
	if err != nil {
		return measurement{}, fmt.Errorf("transactional: %w", err)
	}
	m := measurement{records: s.records, recPerSec: res.rate, mbPerSec: res.rate * float64(s.recordSize) / 1e6,
		cpuSeconds: b.cpuSeconds() - cpu0, gcPauses: b.log.gcPauses(log0)}
	m.latency = map[string]float64{"p50": percentileMs(res.commits, 0.50), "p99": percentileMs(res.commits, 0.99), "max": percentileMs(res.commits, 1)}
	m.extra = map[string]float64{"idempotent_rec_s": idem.rate, "commits": float64(len(res.commits))}
	return m, nil
}

// produceResult is one producer run.
type produceResult struct {
	rate    float64         // records acknowledged per second
	commits []time.Duration // EndTransaction times
}

// txnProduce writes n records of size bytes to topic, transactionally
// when txnID is set (committing as p says), else with the idempotent
// producer, acks=all either way.
func txnProduce(ctx context.Context, addr, topic, txnID string, n int64, size int, p txnParams) (produceResult, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression())}
	if txnID != "" {
		opts = append(opts, kgo.TransactionalID(txnID+"-"+topic))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return produceResult{}, err
	}
	defer cl.Close()
	// Random bytes, uncompressed: the 1 KiB are on the wire and in the log.
	value := make([]byte, size)
	rand.Read(value)
	var failed atomic.Pointer[error]
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.CompareAndSwap(nil, &err)
		}
	}
	var res produceResult
	begun, inTxn := time.Now(), 0
	commit := func() error {
		if err := cl.Flush(ctx); err != nil {
			return err
		}
		t0 := time.Now()
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		res.commits = append(res.commits, time.Since(t0))
		return nil
	}
	start := time.Now()
	for i := int64(0); i < n; i++ {
		if txnID != "" && inTxn == 0 {
			if err := cl.BeginTransaction(); err != nil {
				return produceResult{}, err
			}
			begun = time.Now()
		}
		if p.rate > 0 {
			if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(p.rate))); d > 0 {
				time.Sleep(d) // pacing the load, not waiting for a result
			}
		}
		cl.Produce(ctx, &kgo.Record{Value: value}, promise)
		inTxn++
		if txnID != "" && ((p.commitRecords > 0 && inTxn >= p.commitRecords) || (p.commitEvery > 0 && time.Since(begun) >= p.commitEvery)) {
			if err := commit(); err != nil {
				return produceResult{}, err
			}
			inTxn = 0
		}
	}
	if txnID != "" && inTxn > 0 {
		if err := commit(); err != nil {
			return produceResult{}, err
		}
	} else if err := cl.Flush(ctx); err != nil {
		return produceResult{}, err
	}
	if e := failed.Load(); e != nil {
		return produceResult{}, *e
	}
	res.rate = float64(n) / time.Since(start).Seconds()
	return res, nil
}

// consumeCommitted reads n records of topic from its start with
// read_committed and returns records per second.
func consumeCommitted(ctx context.Context, addr, topic string, n int64) (float64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var got int64
	start := time.Now()
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("read %d of %d records: %w", got, n, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = errors.Join(ferr, err) })
		if ferr != nil {
			return 0, ferr
		}
		got += int64(fs.NumRecords())
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// percentileMs is the q-quantile of ds in milliseconds (0 for none).
func percentileMs(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(len(s)-1, int(float64(len(s))*q))
	return float64(s[i].Microseconds()) / 1000
}

// txnNotes is the notes cell of a "txn" row: commit latencies, and for
// each broker the transactional/idempotent ratio of each run's pair.
func txnNotes(s scenario, vs, ks []measurement) string {
	if txnScenarioParams[s.name].readCommitted {
		return "read_committed consumer over committed transactions of 1,000 records"
	}
	lat := func(ms []measurement) string {
		var p50, p99 []float64
		for _, m := range ms {
			if m.ok {
				p50, p99 = append(p50, m.latency["p50"]), append(p99, m.latency["p99"])
			}
		}
		if len(p50) == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f/%.2f", median(p50), median(p99))
	}
	note := fmt.Sprintf("commit p50/p99 ms V %s, k %s", lat(vs), lat(ks))
	// kfake's pair too: with no disk and no replication behind it, its
	// transactional/idempotent ratio is what the client's protocol (flush,
	// EndTxn, the next transaction's first batch) leaves.
	for _, side := range []struct {
		name string
		ms   []measurement
	}{{"V", vs}, {"k", ks}} {
		var ratios, idem []float64
		for _, m := range side.ms {
			if m.ok && m.extra["idempotent_rec_s"] > 0 {
				ratios = append(ratios, m.recPerSec/m.extra["idempotent_rec_s"])
				idem = append(idem, m.extra["idempotent_rec_s"])
			}
		}
		if len(ratios) > 0 {
			note += fmt.Sprintf("; %s idempotent %.0f rec/s, txn/idempotent %.2f (%.2f–%.2f)", side.name, median(idem), median(ratios), slices.Min(ratios), slices.Max(ratios))
		}
	}
	return note
}
