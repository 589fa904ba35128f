package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/connect"
)

// transactionalOffsets is the offset store an exactly-once source task
// writes through its own producer: distributed mode's offsets topic. The
// task's offset records go into the same transaction as its records, and
// are applied to the store's memory only once that transaction committed.
type transactionalOffsets interface {
	OffsetStore
	Topic() string
	ReadToEnd(ctx context.Context) error
	applyCommitted(connector string, entries []OffsetEntry) error
}

// Topic is the offsets topic's name.
func (t *TopicOffsets) Topic() string { return t.tlog.topic }

func (t *TopicOffsets) applyCommitted(connector string, entries []OffsetEntry) error {
	return t.MemoryOffsets.Put(context.Background(), connector, entries)
}

// Transaction boundaries (transaction.boundary).
const (
	boundaryPoll      = "poll"
	boundaryInterval  = "interval"
	boundaryConnector = "connector"
)

// txnContext is the TransactionContext of a task under
// transaction.boundary=connector: the task's requests, read by the task
// loop after each record and after each batch.
type txnContext struct {
	mu          sync.Mutex // guards everything below; the task may call from any goroutine
	commitBatch bool
	abortBatch  bool
	commitAfter map[*connect.SourceRecord]bool
	abortAfter  map[*connect.SourceRecord]bool
}

func newTxnContext() *txnContext {
	return &txnContext{commitAfter: map[*connect.SourceRecord]bool{}, abortAfter: map[*connect.SourceRecord]bool{}}
}

func (c *txnContext) CommitTransaction() { c.mu.Lock(); c.commitBatch = true; c.mu.Unlock() }
func (c *txnContext) AbortTransaction()  { c.mu.Lock(); c.abortBatch = true; c.mu.Unlock() }
func (c *txnContext) CommitTransactionAfter(rec *connect.SourceRecord) {
	c.mu.Lock()
	c.commitAfter[rec] = true
	c.mu.Unlock()
}
func (c *txnContext) AbortTransactionAfter(rec *connect.SourceRecord) {
	c.mu.Lock()
	c.abortAfter[rec] = true
	c.mu.Unlock()
}

// afterRecord is what was asked for once rec is processed: commit, abort
// (which wins over a commit asked for the same point) or neither.
func (c *txnContext) afterRecord(rec *connect.SourceRecord) (commit, abort bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	commit, abort = c.commitAfter[rec], c.abortAfter[rec]
	delete(c.commitAfter, rec)
	delete(c.abortAfter, rec)
	return commit && !abort, abort
}

// afterBatch is what was asked for the batch just processed; records of
// the batch that were never seen (dropped by an error) are forgotten.
func (c *txnContext) afterBatch() (commit, abort bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	commit, abort = c.commitBatch, c.abortBatch
	c.commitBatch, c.abortBatch = false, false
	clear(c.commitAfter)
	clear(c.abortAfter)
	return commit && !abort, abort
}

// transactionalProducerProps checks the producer settings an exactly-once
// task cannot honour and takes out transaction.timeout.ms, which
// producerOpts does not know.
func transactionalProducerProps(props map[string]string) (map[string]string, time.Duration, error) {
	out := maps.Clone(props)
	timeout := time.Minute // Kafka's transaction.timeout.ms default
	for k, v := range props {
		v = strings.TrimSpace(v)
		switch k {
		case "transactional.id":
			return nil, 0, fmt.Errorf("producer property transactional.id cannot be set with %s=enabled: each source task uses <group.id>-<connector>-<task>", KeyExactlyOnceSource)
		case "acks":
			if v != "all" && v != "-1" {
				return nil, 0, fmt.Errorf("producer property acks=%s cannot be used with %s=enabled: transactions need acks=all", v, KeyExactlyOnceSource)
			}
		case "enable.idempotence":
			if v == "false" {
				return nil, 0, fmt.Errorf("producer property enable.idempotence=false cannot be used with %s=enabled: transactions need an idempotent producer", KeyExactlyOnceSource)
			}
		case "transaction.timeout.ms":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return nil, 0, fmt.Errorf("%s=%s: not a positive number", k, v)
			}
			timeout = time.Duration(n) * time.Millisecond
			delete(out, k)
		}
	}
	return out, timeout, nil
}

// runSourceTransactional is the source task loop with
// exactly.once.source.support=enabled (Kafka's ExactlyOnceWorkerSourceTask):
// the task's records and the offsets of its source partitions are written
// in one transaction of a producer whose transactional id,
// <group.id>-<connector>-<task>, fences any earlier instance of the task,
// so that what a task wrote and where it resumes can never disagree.
// Transactions end after each poll (transaction.boundary=poll), every
// transaction.boundary.interval.ms (interval), or where the task asks
// (connector).
func (t *taskRun) runSourceTransactional(task connect.SourceTask, conv *Converters, chain *Chain, ep errorPolicy) error {
	w := t.w
	name := t.id.Connector
	store, ok := w.offsets.(transactionalOffsets)
	if !ok {
		return fmt.Errorf("%s=enabled needs the offsets topic of a distributed worker", KeyExactlyOnceSource)
	}
	props, err := t.clientOverrides("producer", w.cfg.producerProps)
	if err != nil {
		return err
	}
	props, txnTimeout, err := transactionalProducerProps(props)
	if err != nil {
		return err
	}
	popts, err := producerOpts(props)
	if err != nil {
		return err
	}
	boundary := strings.ToLower(strings.TrimSpace(t.connProps[KeyTxnBoundary]))
	if boundary == "" {
		boundary = boundaryPoll
	}
	interval := w.cfg.OffsetFlushInterval
	if s := strings.TrimSpace(t.connProps[KeyTxnInterval]); s != "" {
		if boundary != boundaryInterval {
			return fmt.Errorf("%s may only be set when %s=%s", KeyTxnInterval, KeyTxnBoundary, boundaryInterval)
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("Invalid value %s for configuration %s", s, KeyTxnInterval)
		}
		interval = time.Duration(n) * time.Millisecond
	}
	txnID := w.cfg.TransactionalID(name, t.id.Task)
	opts := append(t.sourceProducerOpts(popts), kgo.TransactionalID(txnID), kgo.TransactionTimeout(txnTimeout), kgo.RequiredAcks(kgo.AllISRAcks()))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	// Fence an earlier instance of this task before reading the offsets
	// to resume from: once fenced it can commit nothing more, so the
	// offsets read next are the last it will ever have committed.
	fctx, cancel := context.WithTimeout(t.ctx, 2*txnTimeout)
	err = FenceProducers(fctx, cl, []string{txnID})
	if err == nil {
		err = store.ReadToEnd(fctx)
	}
	cancel()
	if err != nil {
		if t.ctx.Err() != nil {
			return errStopped
		}
		return fmt.Errorf("preparing the task's transactions: %w", err)
	}

	var tc *txnContext
	sctx := sourceCtx{props: t.taskProps, offsets: offsetReader{w.offsets, name}}
	if boundary == boundaryConnector {
		tc = newTxnContext()
		sctx.txn = tc
	}
	stopTask, err := t.startSource(task, sctx)
	if err != nil {
		return err
	}
	defer stopTask()
	committer, _ := task.(connect.RecordCommitter)

	eh := &errorHandler{policy: ep, log: w.log, conn: name, task: t.id.Task}
	x := &sourceTxn{t: t, cl: cl, store: store, task: task, committer: committer, offsets: map[string]OffsetEntry{}}
	w.report(t.id, Running, nil)
	for {
		if err := t.awaitStarted(); err != nil {
			break
		}
		if boundary == boundaryInterval && x.open && time.Since(x.began) >= interval {
			if err := x.commit(); err != nil {
				return err
			}
		}
		recs, stop, err := t.pollSource(task)
		if stop {
			break
		}
		if err != nil {
			x.abort()
			return err
		}
		for i := range recs {
			sr := &recs[i]
			rec, err := t.prepareSource(sr, conv, chain, eh)
			if errors.Is(err, errSkip) {
				continue
			}
			if err != nil {
				x.abort()
				return err
			}
			if err := x.add(sr, rec); err != nil {
				x.abort()
				return err
			}
			if tc != nil {
				commit, abort := tc.afterRecord(sr)
				switch {
				case abort:
					x.abort()
				case commit:
					if err := x.commit(); err != nil {
						return err
					}
				}
			}
		}
		switch boundary {
		case boundaryPoll:
			if err := x.commit(); err != nil {
				return err
			}
		case boundaryConnector:
			commit, abort := tc.afterBatch()
			switch {
			case abort:
				x.abort()
			case commit:
				if err := x.commit(); err != nil {
					return err
				}
			}
		}
	}
	// Stopping: a transaction the worker bounds is committed; one the
	// connector bounds and did not end is aborted, as in Kafka.
	stopTask()
	if boundary == boundaryConnector {
		x.abort()
	} else if err := x.commit(); err != nil {
		w.log.Error("committing the final transaction failed", "task", t.id.String(), "err", err)
	}
	return errStopped
}

// sourceTxn is the open transaction of an exactly-once source task: owned
// by the task goroutine, except failed, which producer callbacks set.
type sourceTxn struct {
	t         *taskRun
	cl        *kgo.Client
	store     transactionalOffsets
	task      connect.SourceTask
	committer connect.RecordCommitter

	open    bool
	began   time.Time
	offsets map[string]OffsetEntry // the last offset of each source partition in the transaction
	sent    []sentRecord           // for RecordCommitter, once committed

	mu     sync.Mutex // guards failed and topics
	failed error
	topics map[string]bool
}

type sentRecord struct {
	src *connect.SourceRecord
	rec *kgo.Record
}

func (x *sourceTxn) begin() error {
	if x.open {
		return nil
	}
	if err := x.cl.BeginTransaction(); err != nil {
		return err
	}
	x.open, x.began = true, time.Now()
	return nil
}

// add puts a record (nil: dropped by a transformation, whose offset still
// counts) and its source offset into the transaction.
func (x *sourceTxn) add(sr *connect.SourceRecord, rec *kgo.Record) error {
	if err := x.begin(); err != nil {
		return err
	}
	part := normalised(sr.SourcePartition)
	key, err := json.Marshal(part)
	if err != nil {
		return fmt.Errorf("source partition %v: %w", sr.SourcePartition, err)
	}
	x.offsets[string(key)] = OffsetEntry{Partition: part, Offset: normalised(sr.SourceOffset)}
	if rec == nil {
		return nil
	}
	if x.committer != nil {
		x.sent = append(x.sent, sentRecord{src: sr, rec: rec})
	}
	x.cl.Produce(context.Background(), rec, x.produced)
	return nil
}

func (x *sourceTxn) produced(r *kgo.Record, err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err != nil {
		if x.failed == nil {
			x.failed = fmt.Errorf("producing to %s: %w", r.Topic, err)
		}
		return
	}
	if r.Topic == x.store.Topic() || x.topics[r.Topic] {
		return
	}
	if x.topics == nil {
		x.topics = map[string]bool{}
	}
	x.topics[r.Topic] = true
	x.t.w.listener.OnTopic(x.t.id.Connector, r.Topic)
}

// commit writes the offsets into the transaction and commits it; the
// offsets are applied to the store once the commit is acknowledged. An
// error fails the task: the transaction is aborted (by the coordinator if
// not by us), so nothing of it is visible to read_committed readers.
func (x *sourceTxn) commit() error {
	if !x.open && len(x.offsets) == 0 {
		return nil
	}
	if err := x.begin(); err != nil {
		return err
	}
	name := x.t.id.Connector
	entries := make([]OffsetEntry, 0, len(x.offsets))
	for _, e := range x.offsets {
		entries = append(entries, e)
	}
	kvs, err := encodeEntries(name, entries)
	if err != nil {
		x.abort()
		return err
	}
	for _, kv := range kvs {
		x.cl.Produce(context.Background(), &kgo.Record{Topic: x.store.Topic(), Key: kv[0], Value: kv[1]}, x.produced)
	}
	ctx, cancel := context.WithTimeout(context.Background(), x.t.w.cfg.OffsetFlushTimeout)
	defer cancel()
	if err := x.cl.Flush(ctx); err != nil {
		x.abort()
		return fmt.Errorf("flushing the transaction: %w", err)
	}
	x.mu.Lock()
	failed := x.failed
	x.mu.Unlock()
	if failed != nil {
		x.abort()
		return failed
	}
	if err := x.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		x.open = false
		return fmt.Errorf("committing the transaction: %w", err)
	}
	x.open = false
	if err := x.store.applyCommitted(name, entries); err != nil {
		return err
	}
	clear(x.offsets)
	if err := safeCall(x.task.Commit); err != nil {
		x.t.w.log.Warn("task commit failed", "task", x.t.id.String(), "err", err)
	}
	for _, s := range x.sent {
		if cerr := safeCall(func() error { return x.committer.CommitRecord(s.src, s.rec.Partition, s.rec.Offset) }); cerr != nil {
			x.t.w.log.Warn("task commitRecord failed", "task", x.t.id.String(), "err", cerr)
		}
	}
	x.sent = x.sent[:0]
	return nil
}

// abort drops what the transaction holds; its records stay invisible to
// read_committed readers and its offsets are never applied.
func (x *sourceTxn) abort() {
	clear(x.offsets)
	x.sent = x.sent[:0]
	if !x.open {
		return
	}
	x.open = false
	ctx, cancel := context.WithTimeout(context.Background(), x.t.w.cfg.OffsetFlushTimeout)
	defer cancel()
	if err := x.cl.AbortBufferedRecords(ctx); err != nil {
		x.t.w.log.Warn("aborting buffered records", "task", x.t.id.String(), "err", err)
	}
	if err := x.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		x.t.w.log.Warn("aborting the transaction", "task", x.t.id.String(), "err", err)
	}
	x.mu.Lock()
	x.failed = nil
	x.mu.Unlock()
}
