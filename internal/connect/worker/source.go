package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/connect"
)

// sourceCtx is a source task's SourceTaskContext.
type sourceCtx struct {
	props   map[string]string
	offsets offsetReader
	txn     *txnContext // transaction.boundary=connector under exactly-once support
}

func (c sourceCtx) Configs() map[string]string                       { return c.props }
func (c sourceCtx) OffsetStorageReader() connect.OffsetStorageReader { return c.offsets }
func (c sourceCtx) TransactionContext() connect.TransactionContext {
	if c.txn == nil {
		return nil
	}
	return c.txn
}

type offsetReader struct {
	store     OffsetStore
	connector string
}

func (r offsetReader) Offset(partition map[string]any) (map[string]any, error) {
	return r.store.Get(r.connector, normalised(partition))
}

// normalised round-trips a map through JSON, so that offsets compare and
// key as they will be stored (numbers as int64 or float64).
func normalised(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	if flatAndNormal(m) {
		// What the round trip would give back, without it: a copy, so a
		// task that reuses its map does not change what was recorded.
		return maps.Clone(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return m
	}
	var out map[string]any
	if decodeJSON(b, &out) != nil {
		return m
	}
	return out
}

// flatAndNormal reports whether m comes back from a JSON round trip as it
// is: keys and strings of valid UTF-8, booleans, nulls and int64s only (the
// partitions and offsets of most source connectors: a file name and a
// position, a table and an id).
func flatAndNormal(m map[string]any) bool {
	for k, v := range m {
		if !utf8.ValidString(k) {
			return false
		}
		switch x := v.(type) {
		case nil, bool, int64:
		case string:
			if !utf8.ValidString(x) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// submitted tracks the records a source task handed to the producer, per
// source partition in poll order, so that only the offsets of a prefix of
// acknowledged records are committed (Kafka's SubmittedRecords).
type submitted struct {
	mu      sync.Mutex // guards everything below; held by producer callbacks briefly
	queues  map[string][]*pending
	parts   map[string]map[string]any
	pending int
	failed  error
	drained chan struct{} // closed and replaced when pending reaches 0
}

type pending struct {
	offset map[string]any
	acked  bool
}

func newSubmitted() *submitted {
	return &submitted{queues: map[string][]*pending{}, parts: map[string]map[string]any{}, drained: make(chan struct{})}
}

func (s *submitted) add(part, off map[string]any) *pending {
	key, _ := json.Marshal(part)
	p := &pending{offset: off}
	s.mu.Lock()
	s.queues[string(key)] = append(s.queues[string(key)], p)
	s.parts[string(key)] = part
	s.pending++
	s.mu.Unlock()
	return p
}

func (s *submitted) ack(p *pending, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && s.failed == nil {
		s.failed = err
	}
	if err == nil {
		p.acked = true
	}
	s.pending--
	if s.pending == 0 {
		close(s.drained)
		s.drained = make(chan struct{})
	}
}

// committable removes the acknowledged prefix of each partition's queue and
// returns the last offset of each.
func (s *submitted) committable() []OffsetEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []OffsetEntry
	for k, q := range s.queues {
		n := 0
		for n < len(q) && q[n].acked {
			n++
		}
		if n == 0 {
			continue
		}
		out = append(out, OffsetEntry{Partition: s.parts[k], Offset: q[n-1].offset})
		s.queues[k] = q[n:]
		if len(s.queues[k]) == 0 {
			delete(s.queues, k)
			delete(s.parts, k)
		}
	}
	return out
}

func (s *submitted) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// waitDrained waits until nothing is in flight, or d passes.
func (s *submitted) waitDrained(d time.Duration) bool {
	s.mu.Lock()
	if s.pending == 0 {
		s.mu.Unlock()
		return true
	}
	ch := s.drained
	s.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// runSource is the source task loop: poll, transform, convert, produce;
// offsets of acknowledged records are flushed every
// offset.flush.interval.ms and when the task stops.
func (t *taskRun) runSource(task connect.SourceTask, conv *Converters, chain *Chain, ep errorPolicy) error {
	w := t.w
	if w.cfg.ExactlyOnce() {
		return t.runSourceTransactional(task, conv, chain, ep)
	}
	name := t.id.Connector
	props, err := t.clientOverrides("producer", w.cfg.producerProps)
	if err != nil {
		return err
	}
	popts, err := producerOpts(props)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(t.sourceProducerOpts(popts)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	eh := &errorHandler{policy: ep, log: w.log, conn: name, task: t.id.Task}
	sub := newSubmitted()
	stopTask, err := t.startSource(task, sourceCtx{props: t.taskProps, offsets: offsetReader{w.offsets, name}})
	if err != nil {
		return err
	}
	defer stopTask()
	committer, _ := task.(connect.RecordCommitter)
	flush := func() error {
		entries := sub.committable()
		if len(entries) == 0 {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), w.cfg.OffsetFlushTimeout)
		defer cancel()
		if err := w.offsets.Put(ctx, name, entries); err != nil {
			return fmt.Errorf("flushing offsets: %w", err)
		}
		if err := safeCall(task.Commit); err != nil {
			w.log.Warn("task commit failed", "task", t.id.String(), "err", err)
		}
		return nil
	}
	w.report(t.id, Running, nil)
	lastFlush := time.Now()
	topics := map[string]bool{}
	var topicsMu sync.Mutex
	for {
		if err := t.awaitStarted(); err != nil {
			break
		}
		if err := sub.err(); err != nil && !ep.tolerateAll {
			return fmt.Errorf("producing to Kafka: %w", err)
		}
		if time.Since(lastFlush) >= w.cfg.OffsetFlushInterval {
			if err := flush(); err != nil {
				return err
			}
			lastFlush = time.Now()
		}
		recs, stop, err := t.pollSource(task)
		if stop {
			break
		}
		if err != nil {
			return err
		}
		for i := range recs {
			sr := &recs[i]
			rec, err := t.prepareSource(sr, conv, chain, eh)
			if errors.Is(err, errSkip) {
				continue
			}
			if err != nil {
				return err
			}
			part, off := normalised(sr.SourcePartition), normalised(sr.SourceOffset)
			if rec == nil { // dropped by a transformation: its offset still counts
				p := sub.add(part, off)
				sub.ack(p, nil)
				continue
			}
			p := sub.add(part, off)
			srCopy := sr
			cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
				if err != nil {
					w.log.Error("producing a source record failed", "task", t.id.String(), "topic", r.Topic, "err", err)
					if ep.tolerateAll {
						err = nil // tolerated: skipped, its offset committed
					}
				} else {
					topicsMu.Lock()
					seen := topics[r.Topic]
					topics[r.Topic] = true
					topicsMu.Unlock()
					if !seen {
						w.listener.OnTopic(name, r.Topic)
					}
					if committer != nil {
						if cerr := safeCall(func() error { return committer.CommitRecord(srCopy, r.Partition, r.Offset) }); cerr != nil {
							w.log.Warn("task commitRecord failed", "task", t.id.String(), "err", cerr)
						}
					}
				}
				sub.ack(p, err)
			})
		}
	}
	// Stopping: stop the task, then let what was sent be acknowledged and
	// commit the offsets of what was.
	stopTask()
	if !sub.waitDrained(w.cfg.OffsetFlushTimeout) {
		w.log.Warn("records still in flight at shutdown; their offsets are not committed", "task", t.id.String())
	}
	if err := flush(); err != nil {
		w.log.Error("final offset flush failed", "task", t.id.String(), "err", err)
	}
	return errStopped
}

// sourceProducerOpts are the options of a source task's producer: the
// worker's client, the record's own partition else Kafka's default, and the
// task's producer properties (popts).
func (t *taskRun) sourceProducerOpts(popts []kgo.Opt) []kgo.Opt {
	opts := append(t.w.ClientOpts("connector-producer-"+t.id.String()),
		kgo.RecordPartitioner(partitioner{kgo.StickyKeyPartitioner(nil)}),
		kgo.AllowAutoTopicCreation(),
		kgo.ProducerBatchMaxBytes(1<<20),
	)
	return append(opts, popts...)
}

// startSource initializes and starts a source task; the returned stop
// stops it once, however often it is called.
func (t *taskRun) startSource(task connect.SourceTask, sctx sourceCtx) (stop func(), err error) {
	task.Initialize(sctx)
	if err := safeCall(func() error { return task.Start(t.taskProps) }); err != nil {
		return nil, fmt.Errorf("task failed to start: %w", err)
	}
	stopped := false
	return func() {
		if !stopped {
			stopped = true
			if err := safeCall(task.Stop); err != nil {
				t.w.log.Warn("task stop failed", "task", t.id.String(), "err", err)
			}
		}
	}, nil
}

// pollSource polls the task once. stop: the task is being stopped. A
// retriable error is logged and answered as an empty poll; any other fails
// the task.
func (t *taskRun) pollSource(task connect.SourceTask) (recs []connect.SourceRecord, stop bool, err error) {
	err = safeCall(func() error {
		var err error
		recs, err = task.Poll(t.ctx)
		return err
	})
	if t.ctx.Err() != nil {
		return nil, true, nil
	}
	if err != nil {
		if connect.IsRetriable(err) {
			t.w.log.Warn("retriable error polling the task", "task", t.id.String(), "err", err)
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("task poll: %w", err)
	}
	return recs, false, nil
}

// prepareSource transforms and converts one source record into a Kafka
// record (nil: dropped by a transformation).
func (t *taskRun) prepareSource(sr *connect.SourceRecord, conv *Converters, chain *Chain, eh *errorHandler) (*kgo.Record, error) {
	ctx := t.ctx
	var r *connect.Record
	if err := eh.run(ctx, StageTransformation, "", nil, func() error {
		var err error
		r, err = chain.Apply(&sr.Record)
		return err
	}); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, nil
	}
	out := &kgo.Record{Topic: r.Topic}
	if !r.Timestamp.IsZero() {
		out.Timestamp = r.Timestamp
	}
	if r.Partition != nil {
		out.Context = context.WithValue(context.Background(), manualPartitionKey{}, *r.Partition)
	}
	for _, h := range r.Headers {
		var b []byte
		if err := eh.run(ctx, StageHeaderConverter, conv.HeaderClass, nil, func() error {
			var err error
			b, err = conv.Header.FromConnectHeader(r.Topic, h.Key, h.Schema, h.Value)
			return err
		}); err != nil {
			return nil, err
		}
		out.Headers = append(out.Headers, kgo.RecordHeader{Key: h.Key, Value: b})
	}
	if err := eh.run(ctx, StageKeyConverter, conv.KeyClass, nil, func() error {
		var err error
		out.Key, err = conv.Key.FromConnectData(r.Topic, r.Headers, r.KeySchema, r.Key)
		return err
	}); err != nil {
		return nil, err
	}
	if err := eh.run(ctx, StageValueConverter, conv.ValueClass, nil, func() error {
		var err error
		out.Value, err = conv.Value.FromConnectData(r.Topic, r.Headers, r.ValueSchema, r.Value)
		return err
	}); err != nil {
		return nil, err
	}
	return out, nil
}
