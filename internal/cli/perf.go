package cli

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// perfOptions are the flags shared by the perf commands.
type perfOptions struct {
	recordSize int
	numRecords int64
	duration   time.Duration
	throughput float64
	producers  int
	partitions int32
	progress   bool
	json       bool
	ps         producerSettings
	topic      string        // Kafka's --topic
	props      propertyFlags // --producer-props / --producer.config, or --consumer.config
}

func (o *perfOptions) register(cmd *cobra.Command, produce bool) {
	f := cmd.Flags()
	f.Int64Var(&o.numRecords, "num-records", 0, "stop after this many records")
	f.DurationVar(&o.duration, "duration", 0, "stop after this long (instead of or as well as --num-records)")
	f.BoolVar(&o.progress, "progress", false, "print a progress line every second even when stderr is not a terminal")
	f.BoolVar(&o.json, "json", false, "print the final report as one JSON object on stdout")
	f.StringVar(&o.topic, "topic", "", "topic (Kafka form of the TOPIC argument)")
	if !produce {
		o.props.register(cmd, "consumer.config", "consumer-property", "consumer")
		flagAliases(cmd, map[string]string{"messages": "num-records"})
	}
	if produce {
		o.props.register(cmd, "producer.config", "producer-props", "producer")
		flagAliases(cmd, map[string]string{"producer-property": "producer-props"})
		f.IntVar(&o.recordSize, "record-size", 100, "record value size in bytes")
		f.Float64Var(&o.throughput, "throughput", -1, "target records per second across all producers (-1: unlimited)")
		f.IntVar(&o.producers, "producers", 1, "number of concurrent producer clients")
		f.Int32Var(&o.partitions, "partitions", -1, "partitions when creating a missing topic (-1: broker default)")
		o.ps.register(cmd)
	}
}

func (o *perfOptions) validate(minSize int) error {
	if o.numRecords <= 0 && o.duration <= 0 {
		return errors.New("give --num-records and/or --duration")
	}
	if o.recordSize < minSize {
		return fmt.Errorf("--record-size must be at least %d", minSize)
	}
	if o.producers < 1 {
		return errors.New("--producers must be at least 1")
	}
	if o.throughput == 0 || (o.throughput < 0 && o.throughput != -1) {
		return errors.New("--throughput must be positive or -1 (unlimited)")
	}
	return nil
}

// perfReport is the final report, printed as text or (--json) one object.
type perfReport struct {
	Mode          string          `json:"mode"`
	Topic         string          `json:"topic"`
	Records       int64           `json:"records"`
	Failed        int64           `json:"failed"`
	Bytes         int64           `json:"bytes"`
	Seconds       float64         `json:"seconds"`
	RecordsPerSec float64         `json:"records_per_sec"`
	MBPerSec      float64         `json:"mb_per_sec"`
	LatencyMs     *latencySummary `json:"latency_ms,omitempty"`
	FirstError    string          `json:"first_error,omitempty"`
}

type latencySummary struct {
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func summarize(h *latencyHistogram) *latencySummary {
	if h.Count() == 0 {
		return nil
	}
	return &latencySummary{P50: ms(h.Quantile(0.5)), P95: ms(h.Quantile(0.95)), P99: ms(h.Quantile(0.99)),
		P999: ms(h.Quantile(0.999)), Max: ms(h.Max())}
}

const mib = 1 << 20

func (r *perfReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return writeJSONLine(w, r)
	}
	fmt.Fprintf(w, "%d records %s in %.2fs: %.1f records/sec (%.2f MB/sec)", r.Records, r.Mode, r.Seconds, r.RecordsPerSec, r.MBPerSec)
	if r.Failed > 0 {
		fmt.Fprintf(w, ", %d failed (first: %s)", r.Failed, r.FirstError)
	}
	fmt.Fprintln(w)
	if l := r.LatencyMs; l != nil {
		fmt.Fprintf(w, "latency ms: p50 %.2f, p95 %.2f, p99 %.2f, p99.9 %.2f, max %.2f\n", l.P50, l.P95, l.P99, l.P999, l.Max)
	}
	return nil
}

// perfMeter counts records and bytes and prints a progress line each
// second while running.
type perfMeter struct {
	records, bytes, failed atomic.Int64
	firstErr               atomic.Pointer[error]
	start                  time.Time
}

func (m *perfMeter) fail(err error) {
	m.failed.Add(1)
	m.firstErr.CompareAndSwap(nil, &err)
}

// progress writes "N records, X records/sec (Y MB/sec)" for the last
// second to w until ctx ends.
func (m *perfMeter) progress(ctx context.Context, w io.Writer, verb string) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	lastR, lastB, last := int64(0), int64(0), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			r, b := m.records.Load(), m.bytes.Load()
			secs := now.Sub(last).Seconds()
			fmt.Fprintf(w, "%d records %s, %.1f records/sec (%.2f MB/sec)\n", r, verb, float64(r-lastR)/secs, float64(b-lastB)/mib/secs)
			lastR, lastB, last = r, b, now
		}
	}
}

func (m *perfMeter) report(mode, topic string, h *latencyHistogram) *perfReport {
	secs := time.Since(m.start).Seconds()
	r := &perfReport{Mode: mode, Topic: topic, Records: m.records.Load(), Failed: m.failed.Load(), Bytes: m.bytes.Load(), Seconds: secs}
	if secs > 0 {
		r.RecordsPerSec = float64(r.Records) / secs
		r.MBPerSec = float64(r.Bytes) / mib / secs
	}
	if h != nil {
		r.LatencyMs = summarize(h)
	}
	if e := m.firstErr.Load(); e != nil {
		r.FirstError = (*e).Error()
	}
	return r
}

// isTerminal reports whether f is a character device (a TTY).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (o *perfOptions) wantProgress(e *env) bool {
	if o.progress {
		return true
	}
	f, ok := e.stderr.(*os.File)
	return ok && isTerminal(f)
}

// pacer spaces sends to hit a target rate: send i is due at start+i/rate.
type pacer struct {
	start time.Time
	every time.Duration // 0: unlimited
}

func (p pacer) wait(ctx context.Context, i int64) error {
	if p.every == 0 {
		return ctx.Err()
	}
	d := time.Until(p.start.Add(time.Duration(i) * p.every))
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// producerTopic resolves the topic of a producing perf command and applies
// its producer properties. Kafka's --producer-props takes space-separated
// k=v words, which arrive here as positional arguments.
func (o *perfOptions) producerTopic(in *invocation) (string, error) {
	args, extra := in.args, []string(nil)
	if in.cmd.Flags().Changed("producer-props") {
		args, extra = kafkaPropArgs(in.args)
	}
	topic, err := topicArg(args, o.topic)
	if err != nil {
		return "", err
	}
	o.props.kvs = append(o.props.kvs, extra...)
	kvs, err := o.props.load()
	if err != nil {
		return "", err
	}
	warnings, err := applyProducerProps(kvs, &o.ps, &in.props, in.cmd.Flags().Changed)
	if err != nil {
		return "", err
	}
	for _, w := range warnings {
		fmt.Fprintln(in.stderr, "warning:", w)
	}
	return topic, nil
}

// ensureTopic creates topic if it does not exist.
func ensureTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32) error {
	resp, err := adm.CreateTopic(ctx, partitions, -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %q: %w%s", topic, err, detail(resp.ErrMessage))
	}
	return nil
}

// runContext bounds a perf run by --duration and by SIGINT/SIGTERM.
func (o *perfOptions) runContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := signalContext(parent)
	if o.duration > 0 {
		dctx, dcancel := context.WithTimeout(ctx, o.duration)
		return dctx, func() { dcancel(); cancel() }
	}
	return ctx, cancel
}

func newPerfCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "perf",
		Short: "Measure throughput and latency (kafka-*-perf-test.sh, end-to-end latency)",
		Example: `  vltava perf produce bench --num-records 1000000 --record-size 1024 --throughput -1
  vltava perf consume bench --num-records 1000000
  vltava perf e2e bench --duration 30s --throughput 1000`,
	}
	cmd.AddCommand(newPerfProduceCommand(), newPerfConsumeCommand(), newPerfE2ECommand())
	return cmd
}

// payload returns size random bytes shared by every record; like
// kafka-producer-perf-test, content is irrelevant but random data keeps
// compression honest.
func payload(size int) []byte {
	b := make([]byte, size)
	_, _ = rand.Read(b)
	return b
}

func newPerfProduceCommand() *cobra.Command {
	o := &perfOptions{}
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Produce as fast as allowed and report throughput and ack latency",
		Example: `  vltava perf produce bench --num-records 100000 --record-size 512 --acks all --compression lz4
  vltava perf produce bench --duration 1m --throughput 5000 --producers 4 --partitions 12 --json`,
		Args: cobra.ArbitraryArgs,
		RunE: clusterCommand(func(in *invocation) error {
			if err := o.validate(1); err != nil {
				return err
			}
			topic, err := o.producerTopic(in)
			if err != nil {
				return err
			}
			popts, err := o.ps.opts()
			if err != nil {
				return err
			}
			_, adm, err := in.connect(in.ctx)
			if err != nil {
				return err
			}
			err = ensureTopic(in.ctx, adm, topic, o.partitions)
			adm.Close()
			if err != nil {
				return err
			}
			ctx, cancel := o.runContext(in.ctx)
			defer cancel()
			var (
				h     latencyHistogram
				m     = &perfMeter{start: time.Now()}
				value = payload(o.recordSize)
				next  atomic.Int64 // next record number across producers
				wg    sync.WaitGroup
				errs  = make([]error, o.producers)
			)
			pc := pacer{start: m.start}
			if o.throughput > 0 {
				pc.every = time.Duration(float64(time.Second) / o.throughput)
			}
			if o.wantProgress(in.env) {
				pctx, pcancel := context.WithCancel(ctx)
				defer pcancel()
				go m.progress(pctx, in.stderr, "sent")
			}
			for i := range o.producers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cl, err := kgo.NewClient(append(in.clientOpts(), popts...)...)
					if err != nil {
						errs[i] = err
						return
					}
					defer cl.Close()
					var inflight sync.WaitGroup
					for {
						n := next.Add(1) - 1
						if o.numRecords > 0 && n >= o.numRecords {
							break
						}
						if pc.wait(ctx, n) != nil {
							break
						}
						sent := time.Now()
						inflight.Add(1)
						// A fresh context: records already handed over
						// should finish even after --duration ends.
						cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: value}, func(r *kgo.Record, err error) {
							defer inflight.Done()
							if err != nil {
								m.fail(err)
								return
							}
							h.Record(time.Since(sent))
							m.records.Add(1)
							m.bytes.Add(int64(len(r.Value)))
						})
					}
					inflight.Wait()
				}()
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return err
			}
			rep := m.report("produced", topic, &h)
			if err := rep.print(in.stdout, o.json); err != nil {
				return err
			}
			if rep.Failed > 0 {
				return fmt.Errorf("%d records failed", rep.Failed)
			}
			return nil
		}),
	}
	o.register(cmd, true)
	return cmd
}

func newPerfConsumeCommand() *cobra.Command {
	o := &perfOptions{}
	var group string
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Consume from the beginning and report throughput",
		Example: `  vltava perf consume bench --num-records 100000
  vltava perf consume bench --duration 30s --group perf --json`,
		Args: cobra.ArbitraryArgs,
		RunE: clusterCommand(func(in *invocation) error {
			o.recordSize, o.producers, o.throughput = 1, 1, -1
			if err := o.validate(1); err != nil {
				return err
			}
			topic, err := topicArg(in.args, o.topic)
			if err != nil {
				return err
			}
			kvs, err := o.props.load()
			if err != nil {
				return err
			}
			co := consumeOptions{group: group, isolation: "read_uncommitted"}
			warnings, err := applyConsumerProps(kvs, &co, &in.props, in.cmd.Flags().Changed)
			if err != nil {
				return err
			}
			for _, w := range warnings {
				fmt.Fprintln(in.stderr, "warning:", w)
			}
			opts := []kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
			if co.group != "" {
				opts = append(opts, kgo.ConsumerGroup(co.group))
			}
			fopts, err := co.fetchOpts()
			if err != nil {
				return err
			}
			opts = append(opts, fopts...)
			ctx, cancel := o.runContext(in.ctx)
			defer cancel()
			cl, adm, err := in.cluster(ctx, opts...)
			if err != nil {
				return err
			}
			if td, err := adm.ListTopics(ctx, topic); err != nil {
				return fmt.Errorf("looking up topic %q: %w", topic, err)
			} else if d, ok := td[topic]; !ok || d.Err != nil {
				return fmt.Errorf("topic %q does not exist", topic)
			}
			m := &perfMeter{start: time.Now()}
			if o.wantProgress(in.env) {
				pctx, pcancel := context.WithCancel(ctx)
				defer pcancel()
				go m.progress(pctx, in.stderr, "consumed")
			}
			for ctx.Err() == nil && (o.numRecords <= 0 || m.records.Load() < o.numRecords) {
				fs := cl.PollFetches(ctx)
				fs.EachError(func(_ string, _ int32, err error) {
					if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
						m.fail(err)
					}
				})
				fs.EachRecord(func(r *kgo.Record) {
					m.records.Add(1)
					m.bytes.Add(int64(len(r.Value) + len(r.Key)))
				})
			}
			return m.report("consumed", topic, nil).print(in.stdout, o.json)
		}),
	}
	o.register(cmd, false)
	cmd.Flags().StringVar(&group, "group", "", "consume in this consumer group (default: no group)")
	return cmd
}

// e2eHeader is the prefix of every e2e record value: an 8-byte run id
// (so records of other runs are ignored) and the 8-byte send time in Unix
// nanoseconds, both big-endian.
const e2eHeader = 16

func newPerfE2ECommand() *cobra.Command {
	o := &perfOptions{}
	cmd := &cobra.Command{
		Use:   "e2e TOPIC",
		Short: "Measure produce-to-consume latency from a timestamp carried in each record",
		Long: `Produce records carrying their send time and consume them with a second
client started at the log end; latency is consume time minus send time (both
clients run in this process, so clocks agree). --throughput paces sends;
unlimited throughput measures latency under saturation.`,
		Example: `  vltava perf e2e bench --num-records 10000 --throughput 1000
  vltava perf e2e bench --duration 30s --throughput 500 --acks 1 --json`,
		Args: cobra.ArbitraryArgs,
		RunE: clusterCommand(func(in *invocation) error {
			if err := o.validate(e2eHeader); err != nil {
				return err
			}
			topic, err := o.producerTopic(in)
			if err != nil {
				return err
			}
			popts, err := o.ps.opts()
			if err != nil {
				return err
			}
			pcl, adm, err := in.cluster(in.ctx, popts...)
			if err != nil {
				return err
			}
			if err := ensureTopic(in.ctx, adm, topic, o.partitions); err != nil {
				return err
			}
			ends, err := adm.ListEndOffsets(in.ctx, topic)
			if err != nil {
				return fmt.Errorf("listing end offsets of %q: %w", topic, err)
			}
			start := map[int32]kgo.Offset{}
			ends.Each(func(l kadm.ListedOffset) { start[l.Partition] = kgo.NewOffset().At(l.Offset) })
			if len(start) == 0 {
				return fmt.Errorf("topic %q has no partitions", topic)
			}
			ccl, err := kgo.NewClient(append(in.clientOpts(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}),
				kgo.FetchMaxWait(100*time.Millisecond))...)
			if err != nil {
				return err
			}
			defer ccl.Close()

			ctx, cancel := o.runContext(in.ctx)
			defer cancel()
			var (
				h     latencyHistogram
				m     = &perfMeter{start: time.Now()}
				runID = uint64(time.Now().UnixNano())
				sent  atomic.Int64
				pc    = pacer{start: m.start}
			)
			if o.throughput > 0 {
				pc.every = time.Duration(float64(time.Second) / o.throughput)
			}
			if o.wantProgress(in.env) {
				pctx, pcancel := context.WithCancel(ctx)
				defer pcancel()
				go m.progress(pctx, in.stderr, "received")
			}
			// The producer stops at the record limit or deadline; the
			// consumer then drains what was acknowledged, bounded by
			// drainTimeout so a lost record cannot hang the run.
			producerDone := make(chan struct{})
			go func() {
				defer close(producerDone)
				var inflight sync.WaitGroup
				for n := int64(0); o.numRecords <= 0 || n < o.numRecords; n++ {
					if pc.wait(ctx, n) != nil {
						break
					}
					v := make([]byte, o.recordSize)
					binary.BigEndian.PutUint64(v, runID)
					binary.BigEndian.PutUint64(v[8:], uint64(time.Now().UnixNano()))
					inflight.Add(1)
					pcl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: v}, func(_ *kgo.Record, err error) {
						defer inflight.Done()
						if err != nil {
							m.fail(err)
							return
						}
						sent.Add(1)
					})
				}
				inflight.Wait()
			}()
			const drainTimeout = 10 * time.Second
			var drainDeadline time.Time
			for {
				select {
				case <-producerDone:
					if drainDeadline.IsZero() {
						drainDeadline = time.Now().Add(drainTimeout)
					}
				default:
				}
				if !drainDeadline.IsZero() && (m.records.Load() >= sent.Load() || time.Now().After(drainDeadline) || in.ctx.Err() != nil) {
					break
				}
				pctx, pcancel := context.WithTimeout(in.ctx, 200*time.Millisecond)
				fs := ccl.PollFetches(pctx)
				pcancel()
				now := time.Now()
				fs.EachRecord(func(r *kgo.Record) {
					if len(r.Value) < e2eHeader || binary.BigEndian.Uint64(r.Value) != runID {
						return
					}
					h.Record(now.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(r.Value[8:])))))
					m.records.Add(1)
					m.bytes.Add(int64(len(r.Value)))
				})
			}
			rep := m.report("end-to-end", topic, &h)
			if lost := sent.Load() - m.records.Load(); lost > 0 && rep.FirstError == "" {
				rep.FirstError = fmt.Sprintf("%d acknowledged records were not consumed within %v", lost, drainTimeout)
			}
			if err := rep.print(in.stdout, o.json); err != nil {
				return err
			}
			if rep.Failed > 0 || rep.FirstError != "" {
				return fmt.Errorf("e2e run incomplete: %s", rep.FirstError)
			}
			return nil
		}),
	}
	o.register(cmd, true)
	return cmd
}
