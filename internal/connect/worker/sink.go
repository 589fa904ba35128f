package worker

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/connect"
)

// sinkCtx is a sink task's SinkTaskContext. Its methods are called by the
// task from inside Put, Open, Close or PreCommit, on the task loop's
// goroutine (or under its lock), so plain fields suffice except where noted.
type sinkCtx struct {
	t         *taskRun
	cl        *kgo.Client
	props     map[string]string
	timeout   time.Duration
	commitReq bool
	assigned  map[connect.TopicPartition]bool
	reporter  *errantReporter
}

func (c *sinkCtx) Configs() map[string]string { return c.props }
func (c *sinkCtx) Offset(offsets map[connect.TopicPartition]int64) {
	set := map[string]map[int32]kgo.EpochOffset{}
	for tp, off := range offsets {
		if set[tp.Topic] == nil {
			set[tp.Topic] = map[int32]kgo.EpochOffset{}
		}
		set[tp.Topic][tp.Partition] = kgo.EpochOffset{Epoch: -1, Offset: off}
	}
	c.cl.SetOffsets(set)
}
func (c *sinkCtx) Timeout(d time.Duration) { c.timeout = d }
func (c *sinkCtx) Assignment() []connect.TopicPartition {
	out := make([]connect.TopicPartition, 0, len(c.assigned))
	for tp := range c.assigned {
		out = append(out, tp)
	}
	return out
}
func (c *sinkCtx) Pause(tps ...connect.TopicPartition)  { c.cl.PauseFetchPartitions(tpMap(tps)) }
func (c *sinkCtx) Resume(tps ...connect.TopicPartition) { c.cl.ResumeFetchPartitions(tpMap(tps)) }
func (c *sinkCtx) RequestCommit()                       { c.commitReq = true }
func (c *sinkCtx) ErrantRecordReporter() connect.ErrantRecordReporter {
	if c.reporter == nil {
		return nil
	}
	return c.reporter
}

func tpMap(tps []connect.TopicPartition) map[string][]int32 {
	m := map[string][]int32{}
	for _, tp := range tps {
		m[tp.Topic] = append(m[tp.Topic], tp.Partition)
	}
	return m
}

// errantReporter is the KIP-610 reporter: a record the task reports goes
// through the error handler (log, DLQ, tolerance) as a TASK_PUT failure.
type errantReporter struct {
	eh    *errorHandler
	ctx   context.Context
	mu    sync.Mutex // guards orig and fatal: Report may be called from the task's own goroutines
	orig  map[origKey]*kgo.Record
	fatal error
}

type origKey struct {
	topic     string
	partition int32
	offset    int64
}

func (r *errantReporter) Report(rec *connect.SinkRecord, cause error) error {
	r.mu.Lock()
	orig := r.orig[origKey{rec.OriginalTopic, rec.OriginalPartition, rec.OriginalOffset}]
	r.mu.Unlock()
	err := r.eh.run(r.ctx, StageTaskPut, "", orig, func() error { return cause })
	if err == nil || errors.Is(err, errSkip) {
		return nil
	}
	r.mu.Lock()
	if r.fatal == nil {
		r.fatal = err
	}
	r.mu.Unlock()
	return err
}

// runSink is the sink task loop: a consumer in group connect-<connector>,
// batches converted and transformed into Put, and every
// offset.flush.interval.ms PreCommit then a synchronous offset commit.
func (t *taskRun) runSink(task connect.SinkTask, conv *Converters, chain *Chain, ep errorPolicy) error {
	w := t.w
	name := t.id.Connector
	cprops, err := t.clientOverrides("consumer", w.cfg.consumerProps)
	if err != nil {
		return err
	}
	copts, err := consumerOpts(cprops)
	if err != nil {
		return err
	}
	var mu sync.Mutex // held by the loop while it works on a batch and by the rebalance callbacks
	sc := &sinkCtx{t: t, props: t.taskProps, assigned: map[connect.TopicPartition]bool{}}
	current := map[connect.TopicPartition]int64{}
	committed := map[connect.TopicPartition]int64{}
	var failure error
	fail := func(err error) {
		if failure == nil {
			failure = err
		}
	}
	commit := func(ctx context.Context, only map[connect.TopicPartition]bool) error {
		cur := map[connect.TopicPartition]int64{}
		for tp, o := range current {
			if only == nil || only[tp] {
				cur[tp] = o
			}
		}
		var offs map[connect.TopicPartition]int64
		if err := safeCall(func() error {
			var err error
			offs, err = task.PreCommit(cur)
			return err
		}); err != nil {
			w.log.Warn("sink task preCommit failed; offsets not committed", "task", t.id.String(), "err", err)
			return nil
		}
		commitMap := map[string]map[int32]kgo.EpochOffset{}
		for tp, o := range offs {
			if !sc.assigned[tp] || committed[tp] == o {
				continue
			}
			if commitMap[tp.Topic] == nil {
				commitMap[tp.Topic] = map[int32]kgo.EpochOffset{}
			}
			commitMap[tp.Topic][tp.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o}
		}
		if len(commitMap) == 0 {
			return nil
		}
		var cerr error
		sc.cl.CommitOffsetsSync(ctx, commitMap, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				cerr = err
				return
			}
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if rp.ErrorCode != 0 && cerr == nil {
						cerr = fmt.Errorf("committing %s-%d: error code %d", rt.Topic, rp.Partition, rp.ErrorCode)
					}
				}
			}
		})
		if cerr != nil {
			w.log.Warn("sink offset commit failed", "task", t.id.String(), "err", cerr)
			return nil
		}
		for tp, po := range commitMap {
			for p, o := range po {
				committed[connect.TopicPartition{Topic: tp, Partition: p}] = o.Offset
			}
		}
		return nil
	}
	toTPs := func(m map[string][]int32) []connect.TopicPartition {
		var out []connect.TopicPartition
		for tp, ps := range m {
			for _, p := range ps {
				out = append(out, connect.TopicPartition{Topic: tp, Partition: p})
			}
		}
		return out
	}
	opts := append(w.ClientOpts("connector-consumer-"+t.id.String()),
		kgo.ConsumerGroup("connect-"+name),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			tps := toTPs(m)
			for _, tp := range tps {
				sc.assigned[tp] = true
			}
			if err := safeCall(func() error { return task.Open(tps) }); err != nil {
				fail(fmt.Errorf("sink task open: %w", err))
			}
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			tps := toTPs(m)
			only := map[connect.TopicPartition]bool{}
			for _, tp := range tps {
				only[tp] = true
			}
			if failure == nil {
				_ = commit(ctx, only)
			}
			if err := safeCall(func() error { return task.Close(tps) }); err != nil {
				fail(fmt.Errorf("sink task close: %w", err))
			}
			for _, tp := range tps {
				delete(sc.assigned, tp)
				delete(current, tp)
				delete(committed, tp)
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			tps := toTPs(m)
			_ = safeCall(func() error { return task.Close(tps) })
			for _, tp := range tps {
				delete(sc.assigned, tp)
				delete(current, tp)
				delete(committed, tp)
			}
		}),
	)
	if re := strings.TrimSpace(t.taskProps[KeyTopicsRegex]); re != "" {
		if _, err := regexp.Compile(re); err != nil {
			return fmt.Errorf("%s: %w", KeyTopicsRegex, err)
		}
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics(re))
	} else {
		opts = append(opts, kgo.ConsumeTopics(listOf(t.taskProps[KeyTopics])...))
	}
	opts = append(opts, copts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	sc.cl = cl
	eh := &errorHandler{policy: ep, log: w.log, conn: name, task: t.id.Task}
	if ep.dlqTopic != "" {
		popts, err := producerOpts(w.cfg.producerProps)
		if err != nil {
			cl.Close()
			return err
		}
		dlq, err := kgo.NewClient(append(w.ClientOpts("connector-dlq-producer-"+t.id.String()), popts...)...)
		if err != nil {
			cl.Close()
			return err
		}
		defer dlq.Close()
		ctx, cancel := context.WithTimeout(t.ctx, 30*time.Second)
		err = EnsureTopic(ctx, dlq, ep.dlqTopic, 1, ep.dlqRF, nil)
		cancel()
		if err != nil {
			cl.Close()
			return fmt.Errorf("creating the dead letter queue topic %s: %w", ep.dlqTopic, err)
		}
		eh.dlq = dlq
	}
	sc.reporter = &errantReporter{eh: eh, ctx: t.ctx, orig: map[origKey]*kgo.Record{}}
	task.Initialize(sc)
	if err := safeCall(func() error { return task.Start(t.taskProps) }); err != nil {
		cl.Close()
		return fmt.Errorf("task failed to start: %w", err)
	}
	defer func() {
		// Leave the group after the final commit and Close (the revoke
		// callback runs on leave).
		done := make(chan struct{})
		go func() { cl.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(w.cfg.TaskShutdownTimeout):
			w.log.Warn("sink consumer close timed out", "task", t.id.String())
		}
		if err := safeCall(task.Stop); err != nil {
			w.log.Warn("task stop failed", "task", t.id.String(), "err", err)
		}
	}()
	w.report(t.id, Running, nil)
	maxRecs := maxPollRecords(cprops)
	lastCommit := time.Now()
	topics := map[string]bool{}
	paused := false
	var retry []connect.SinkRecord // a batch to redeliver after a RetriableError
	for t.ctx.Err() == nil {
		if t.currentTarget() != TargetStarted {
			if !paused {
				paused = true
				cl.PauseFetchTopics(cl.GetConsumeTopics()...)
				w.report(t.id, Paused, nil)
			}
		} else if paused {
			paused = false
			cl.ResumeFetchTopics(cl.GetConsumeTopics()...)
			w.report(t.id, Running, nil)
		}
		var fetches kgo.Fetches
		if retry == nil && !paused {
			pctx, cancel := context.WithTimeout(t.ctx, time.Second)
			fetches = cl.PollRecords(pctx, maxRecs)
			cancel()
		} else if paused {
			select {
			case <-t.ctx.Done():
			case <-t.targetCh:
			case <-time.After(time.Second):
			}
		}
		if t.ctx.Err() != nil {
			cl.AllowRebalance()
			break
		}
		mu.Lock()
		err := t.sinkBatch(fetches, &retry, task, sc, conv, chain, eh, current, topics)
		if failure != nil && err == nil {
			err = failure
		}
		sc.reporter.mu.Lock()
		if sc.reporter.fatal != nil && err == nil {
			err = sc.reporter.fatal
		}
		clear(sc.reporter.orig)
		sc.reporter.mu.Unlock()
		if err == nil && (sc.commitReq || time.Since(lastCommit) >= w.cfg.OffsetFlushInterval) {
			sc.commitReq = false
			lastCommit = time.Now()
			ctx, cancel := context.WithTimeout(t.ctx, w.cfg.OffsetFlushTimeout)
			_ = commit(ctx, nil)
			cancel()
		}
		mu.Unlock()
		cl.AllowRebalance()
		if err != nil {
			return err
		}
	}
	// Final commit of what was put, before leaving the group.
	mu.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.OffsetFlushTimeout)
	_ = commit(ctx, nil)
	cancel()
	mu.Unlock()
	return errStopped
}

// sinkBatch converts and transforms fetched records and puts them, or
// redelivers a batch the task asked to retry.
func (t *taskRun) sinkBatch(fetches kgo.Fetches, retry *[]connect.SinkRecord, task connect.SinkTask, sc *sinkCtx,
	conv *Converters, chain *Chain, eh *errorHandler, current map[connect.TopicPartition]int64, topics map[string]bool) error {
	batch := *retry
	if batch == nil {
		var ferr error
		fetches.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			t.w.log.Warn("sink fetch error", "task", t.id.String(), "topic", topic, "partition", p, "err", err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if ferr != nil {
				return
			}
			tp := connect.TopicPartition{Topic: r.Topic, Partition: r.Partition}
			if !sc.assigned[tp] {
				return
			}
			if !topics[r.Topic] {
				topics[r.Topic] = true
				t.w.listener.OnTopic(t.id.Connector, r.Topic)
			}
			sr, err := t.convertSink(r, conv, chain, eh)
			current[tp] = r.Offset + 1
			if errors.Is(err, errSkip) {
				return
			}
			if err != nil {
				ferr = err
				return
			}
			if sr != nil {
				sc.reporter.mu.Lock()
				sc.reporter.orig[origKey{r.Topic, r.Partition, r.Offset}] = r
				sc.reporter.mu.Unlock()
				batch = append(batch, *sr)
			}
		})
		if ferr != nil {
			return ferr
		}
	}
	if batch == nil && fetches.NumRecords() == 0 && *retry == nil {
		// Kafka calls put with an empty batch too, so tasks can flush on time.
		batch = []connect.SinkRecord{}
	}
	err := safeCall(func() error { return task.Put(batch) })
	if err == nil {
		*retry = nil
		return nil
	}
	if connect.IsRetriable(err) {
		t.w.log.Warn("sink task asked for redelivery", "task", t.id.String(), "err", err)
		*retry = batch
		d := sc.timeout
		if d <= 0 {
			d = time.Second
		}
		select {
		case <-t.ctx.Done():
		case <-time.After(d):
		}
		return nil
	}
	return fmt.Errorf("sink task put: %w", err)
}

// convertSink turns a consumed record into a transformed SinkRecord (nil:
// dropped by a transformation).
func (t *taskRun) convertSink(r *kgo.Record, conv *Converters, chain *Chain, eh *errorHandler) (*connect.SinkRecord, error) {
	ctx := t.ctx
	sr := &connect.SinkRecord{KafkaOffset: r.Offset, OriginalTopic: r.Topic, OriginalPartition: r.Partition, OriginalOffset: r.Offset}
	sr.Topic = r.Topic
	p := r.Partition
	sr.Partition = &p
	sr.Timestamp = r.Timestamp
	sr.TimestampType = connect.CreateTime
	if r.Attrs.TimestampType() == 1 {
		sr.TimestampType = connect.LogAppendTime
	}
	for _, h := range r.Headers {
		var hs *connect.Schema
		var hv any
		if err := eh.run(ctx, StageHeaderConverter, conv.HeaderClass, r, func() error {
			var err error
			hs, hv, err = conv.Header.ToConnectHeader(r.Topic, h.Key, h.Value)
			return err
		}); err != nil {
			return nil, err
		}
		sr.Headers = append(sr.Headers, connect.Header{Key: h.Key, Schema: hs, Value: hv})
	}
	if err := eh.run(ctx, StageKeyConverter, conv.KeyClass, r, func() error {
		var err error
		sr.KeySchema, sr.Key, err = conv.Key.ToConnectData(r.Topic, sr.Headers, r.Key)
		return err
	}); err != nil {
		return nil, err
	}
	if err := eh.run(ctx, StageValueConverter, conv.ValueClass, r, func() error {
		var err error
		sr.ValueSchema, sr.Value, err = conv.Value.ToConnectData(r.Topic, sr.Headers, r.Value)
		return err
	}); err != nil {
		return nil, err
	}
	var out *connect.Record
	if err := eh.run(ctx, StageTransformation, "", r, func() error {
		var err error
		out, err = chain.Apply(&sr.Record)
		return err
	}); err != nil {
		return nil, err
	}
	if out == nil {
		return nil, nil
	}
	sr.Record = *out
	return sr, nil
}
