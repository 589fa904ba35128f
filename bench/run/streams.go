package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vltava/vltava/streams"
)

// The streams scenarios measure the streams library against a Vltava
// broker, each against a baseline run on the same broker process so the
// ratio is paired: a stateless filter+map topology against a plain
// franz-go consume→produce loop doing the same work; exactly_once_v2
// against at_least_once on the same topology; and a windowed count over
// 100,000 keys in pebble (with its changelog), against the filter+map
// topology. The input is loaded first; a run's rate is the input records
// committed from the group's first committed progress until it has
// committed the whole input, over that time (commit.interval.ms=100
// everywhere, the interval Kafka Streams' EOS figures are quoted at). The
// application runs in this process.

// streamsParams says what a "streams" scenario compares.
type streamsParams struct {
	measured, baseline string // "plain", "alos", "eos", "windowed"
	keys               int
}

var streamsScenarioParams = map[string]streamsParams{
	"streams filter+map 100B p=4 vs plain loop": {measured: "alos", baseline: "plain", keys: 10_000},
	"streams exactly_once_v2 vs at_least_once":  {measured: "eos", baseline: "alos", keys: 10_000},
	"streams windowed count pebble 100k keys":   {measured: "windowed", baseline: "alos", keys: 100_000},
}

// streamsScenarios are registered in scenarios().
func streamsScenarios() []scenario {
	var ss []scenario
	for _, name := range []string{"streams filter+map 100B p=4 vs plain loop", "streams exactly_once_v2 vs at_least_once",
		"streams windowed count pebble 100k keys"} {
		n := int64(2_000_000)
		if streamsScenarioParams[name].measured == "windowed" {
			n = 1_000_000
		}
		ss = append(ss, scenario{name: name, kind: "streams", recordSize: 100, records: n, partitions: 4, vltavaOnly: true})
	}
	return ss
}

// measureStreams runs a "streams" scenario against broker b: the baseline
// first, then the measured pipeline, on their own input copies.
func measureStreams(b *broker, s scenario) (measurement, error) {
	p, ok := streamsScenarioParams[s.name]
	if !ok {
		return measurement{}, fmt.Errorf("no streams parameters for scenario %q", s.name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return measurement{}, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	rates := map[string]float64{}
	var cpu float64
	for _, kind := range []string{p.baseline, p.measured} {
		in, out := "bench-in-"+kind, "bench-out-"+kind
		if _, err := adm.CreateTopics(ctx, int32(s.partitions), 1, nil, in, out); err != nil {
			return measurement{}, err
		}
		if err := loadInput(ctx, cl, in, s.records, s.recordSize, p.keys); err != nil {
			return measurement{}, fmt.Errorf("loading %s: %w", in, err)
		}
		cpu0 := b.cpuSeconds()
		rate, err := runPipeline(ctx, b.addr, adm, kind, in, out, s.records)
		if err != nil {
			return measurement{}, fmt.Errorf("%s: %w", kind, err)
		}
		rates[kind] = rate
		if kind == p.measured {
			cpu = b.cpuSeconds() - cpu0
		}
	}
	return measurement{records: s.records, recPerSec: rates[p.measured], cpuSeconds: cpu,
		extra: map[string]float64{"baseline_rec_s": rates[p.baseline]}}, nil
}

// loadInput writes n records of size bytes with keys k0..k(keys-1).
func loadInput(ctx context.Context, cl *kgo.Client, topic string, n int64, size, keys int) error {
	rng := rand.New(rand.NewSource(1))
	value := bytes.Repeat([]byte("v"), size)
	var failed error
	for i := int64(0); i < n; i++ {
		k := []byte("k" + strconv.Itoa(rng.Intn(keys)))
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: k, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil && failed == nil {
				failed = err
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	return failed
}

// keep and transform are the stateless work of both the topology and the
// plain loop: drop a tenth of the records, prefix the rest's value.
func keep(k []byte) bool { return len(k) == 0 || k[len(k)-1] != '7' }

func transform(v []byte) []byte { return append([]byte("seen:"), v...) }

// runPipeline runs one pipeline until its group has committed all n input
// records, and returns input records per second.
func runPipeline(ctx context.Context, addr string, adm *kadm.Client, kind, in, out string, n int64) (float64, error) {
	group := "bench-" + kind
	start := time.Now()
	var stop func() error
	switch kind {
	case "plain":
		stop = plainLoop(ctx, addr, group, in, out)
	default:
		b := streams.NewBuilder()
		src := streams.NewStream(b, in, streams.Bytes(), streams.Bytes())
		if kind == "windowed" {
			streams.WindowedBy(src.GroupByKey(), streams.TimeWindowsOfSizeWithNoGrace(time.Minute)).
				Count(streams.Materialized("counts")).ToStream().
				To(out, streams.WithKeySerde(streams.TimeWindowedSerde(streams.Bytes(), time.Minute)), streams.WithValueSerde(streams.Int64()))
		} else {
			streams.MapValues(src.Filter(func(k, _ []byte) bool { return keep(k) }), func(_, v []byte) []byte { return transform(v) }).To(out)
		}
		topo, err := b.Build()
		if err != nil {
			return 0, err
		}
		guarantee := streams.AtLeastOnce
		if kind == "eos" {
			guarantee = streams.ExactlyOnceV2
		}
		dir, err := os.MkdirTemp("", "bench-streams-")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(dir)
		cfg, err := streams.ParseConfig(map[string]string{"application.id": group, "bootstrap.servers": addr,
			"processing.guarantee": guarantee, "commit.interval.ms": "100", "state.dir": dir})
		if err != nil {
			return 0, err
		}
		app, err := streams.New(topo, cfg, streams.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		if err != nil {
			return 0, err
		}
		if err := app.Start(ctx); err != nil {
			return 0, err
		}
		stop = app.Close
	}
	// The clock runs from the group's first committed progress to the
	// whole input committed, so the group join and task start-up are
	// not in the rate.
	var t1 time.Time
	var done1 int64
	for {
		offs, err := adm.FetchOffsets(ctx, group)
		if err == nil {
			var done int64
			offs.Each(func(o kadm.OffsetResponse) {
				if o.Topic == in && o.At > 0 {
					done += o.At
				}
			})
			if done > 0 && t1.IsZero() {
				t1, done1 = time.Now(), done
			}
			if done >= n {
				break
			}
		}
		if ctx.Err() != nil {
			_ = stop()
			return 0, fmt.Errorf("input not all committed: %w", ctx.Err())
		}
		time.Sleep(10 * time.Millisecond) // polling the group's offsets
	}
	elapsed := time.Since(t1)
	if err := stop(); err != nil {
		return 0, err
	}
	if done1 >= n {
		// All committed at the first commit (a small smoke input): the
		// rate includes the start-up.
		return float64(n) / t1.Sub(start).Seconds(), nil
	}
	return float64(n-done1) / elapsed.Seconds(), nil
}

// plainLoop is the baseline: a franz-go group consumer that filters and
// maps each record, produces the result, and commits what it polled every
// 100 ms once its output is flushed (at least once).
func plainLoop(ctx context.Context, addr, group, in, out string) func() error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(in),
		kgo.DisableAutoCommit(), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return func() error { return err }
	}
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		last := time.Now()
		for {
			// A bounded poll, so the loop commits its last records even
			// when no more arrive.
			pctx, pcancel := context.WithTimeout(lctx, 100*time.Millisecond)
			fs := cl.PollFetches(pctx)
			pcancel()
			if lctx.Err() != nil {
				done <- nil
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				if keep(r.Key) {
					cl.Produce(lctx, &kgo.Record{Topic: out, Key: r.Key, Value: transform(r.Value)}, nil)
				}
			})
			if time.Since(last) >= 100*time.Millisecond {
				if err := cl.Flush(lctx); err != nil {
					done <- err
					return
				}
				if err := cl.CommitUncommittedOffsets(lctx); err != nil {
					done <- err
					return
				}
				last = time.Now()
			}
		}
	}()
	return func() error {
		cancel()
		err := <-done
		cl.Close()
		return err
	}
}

// streamsNotes is the notes cell of a "streams" row: the baseline's rate
// and the paired ratio of each run.
func streamsNotes(s scenario, vs []measurement) string {
	p := streamsScenarioParams[s.name]
	var ratios, base []float64
	for _, m := range vs {
		if m.ok && m.extra["baseline_rec_s"] > 0 {
			ratios = append(ratios, m.recPerSec/m.extra["baseline_rec_s"])
			base = append(base, m.extra["baseline_rec_s"])
		}
	}
	if len(ratios) == 0 {
		return "no baseline"
	}
	names := map[string]string{"plain": "plain franz-go loop", "alos": "streams at_least_once filter+map", "eos": "exactly_once_v2", "windowed": "windowed count"}
	return fmt.Sprintf("%s; baseline %s %.0f rec/s; %s/baseline %.2f (%.2f–%.2f)", names[p.measured], names[p.baseline], median(base),
		p.measured, median(ratios), slices.Min(ratios), slices.Max(ratios))
}
