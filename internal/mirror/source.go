package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Source copies one flow's topics (MirrorSourceConnector): it creates the
// remote topics with the source's partition count and configs, follows new
// partitions and topics, copies records with key, value, headers and
// timestamp to the same partition of the remote topic, writes offset syncs,
// and stores its source offsets in the flow's offsets topic on the target.
//
// One goroutine (Run) owns the consumer and the topic map; the producer's
// callbacks update the partition states under mu, which guards nothing
// else and is never held across I/O.
type Source struct {
	flow     Flow
	src, tgt Cluster
	log      *slog.Logger

	mu      sync.Mutex
	parts   map[partitionKey]*partState
	pending []OffsetSync // syncs decided, not yet written
	failed  error        // a record the target refused for good

	// workerOffsets: a Connect worker stores the source offsets (the
	// MirrorSourceConnector task), so background writes offset syncs only.
	workerOffsets bool

	// leaders: where the remote partitions are written in the
	// offset-preserving mode; owned by runOnce's preserving writer.
	leaders map[partitionKey]leader
}

type partState struct {
	// the last sync written (-1: none)
	syncUp, syncDown int64
	// the last record acknowledged
	prevUp, prevDown int64
	// progress is the last upstream offset acknowledged; dirty when not
	// yet stored in the offsets topic.
	progress int64
	dirty    bool
}

// NewSource makes the flow's source replicator.
func NewSource(f Flow, src, tgt Cluster, log *slog.Logger) *Source {
	return &Source{flow: f, src: src, tgt: tgt, log: log.With("flow", f.Name(), "connector", "MirrorSourceConnector"), parts: map[partitionKey]*partState{}}
}

// Run replicates until ctx ends, restarting with backoff after a failure
// (an unreachable cluster, a record refused by the target): it resumes from
// the stored source offsets, so nothing acknowledged is lost.
func (s *Source) Run(ctx context.Context) error {
	backoff := time.Second
	for {
		start := time.Now()
		err := s.runOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(start) > time.Minute {
			backoff = time.Second
		}
		s.log.Warn("replication failed, retrying", "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

func (s *Source) runOnce(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := s.flow
	s.mu.Lock()
	s.parts, s.pending, s.failed = map[partitionKey]*partState{}, nil, nil
	s.mu.Unlock()
	s.leaders = nil

	popts := []kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.ProducerBatchMaxBytes(1 << 20),
		kgo.MaxBufferedRecords(50000),
		// compression.type=none, the producer default MirrorMaker runs with.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	}
	if f.ExactlyOnce {
		popts = append(popts, kgo.TransactionalID("mm2-"+f.Name()+"-MirrorSourceConnector-0"), kgo.TransactionTimeout(60*time.Second))
	}
	tgtCl, err := s.tgt.Client(popts...)
	if err != nil {
		return err
	}
	defer tgtCl.Close()
	tgtAdm := kadm.NewClient(tgtCl)
	srcAdmCl, err := s.src.Client()
	if err != nil {
		return err
	}
	defer srcAdmCl.Close()
	srcAdm := kadm.NewClient(srcAdmCl)

	if err := ensureTopic(ctx, tgtAdm, f.OffsetsTopic(), 25, f.OffsetsReplicationFactor, true); err != nil {
		return err
	}
	syncAdm, syncCl := srcAdm, srcAdmCl
	if f.OffsetSyncsOnTarget {
		syncAdm, syncCl = tgtAdm, tgtCl
	}
	if f.ExactlyOnce && f.OffsetSyncsOnTarget {
		// Syncs go through a plain producer: they are not part of the
		// copied data's transactions.
		c, err := s.tgt.Client()
		if err != nil {
			return err
		}
		defer c.Close()
		syncCl = c
	}
	if err := ensureTopic(ctx, syncAdm, f.Policy.OffsetSyncsTopic(f.Target), 1, f.OffsetSyncsReplicationFactor, true); err != nil {
		return err
	}
	progress, err := LoadProgress(ctx, s.tgt, f)
	if err != nil {
		return fmt.Errorf("reading %s: %w", f.OffsetsTopic(), err)
	}

	consumer, err := s.src.Client(kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(500*time.Millisecond), kgo.MetadataMinAge(time.Second), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer consumer.Close()

	topics := newTopicSync(s, srcAdmCl, tgtCl)
	stored := func(k partitionKey) (int64, bool) { off, ok := progress[k]; return off, ok }
	if f.PreserveOffsets {
		// The target's end offsets are the truth: what is there is
		// never written again.
		stored = s.targetEnds(ctx, tgtAdm)
	}
	if err := topics.refresh(ctx, consumer, stored); err != nil {
		return err
	}
	if f.SyncTopicACLs {
		topics.syncACLs(ctx)
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.background(ctx, topics, consumer, stored, tgtCl, syncCl)
	}()

	// The offset-preserving copy writes in its own goroutine, a poll
	// behind the consumer, so fetching A and writing B overlap (the
	// producer's pipelining does that in the other modes).
	var preserveQ chan kgo.Fetches
	if f.PreserveOffsets {
		preserveQ = make(chan kgo.Fetches, 2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for fs := range preserveQ {
				if err := s.copyPreserving(ctx, tgtCl, fs); err != nil {
					if ctx.Err() == nil {
						s.fail(err)
						cancel()
					}
					return
				}
			}
		}()
		defer close(preserveQ)
	}

	for {
		fs := consumer.PollFetches(ctx)
		if err := s.failure(); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				return // deleted on the source: the next refresh drops it
			}
			ferr = fmt.Errorf("fetching %s[%d]: %w", t, p, err)
		})
		if ferr != nil {
			return ferr
		}
		if f.ExactlyOnce {
			if err := s.copyTransaction(ctx, tgtCl, fs); err != nil {
				return err
			}
			s.writeSyncs(ctx, syncCl, true)
			continue
		}
		if f.PreserveOffsets {
			select {
			case preserveQ <- fs:
			case <-ctx.Done():
				if err := s.failure(); err != nil {
					return err
				}
				return ctx.Err()
			}
			continue
		}
		fs.EachRecord(func(r *kgo.Record) { tgtCl.Produce(ctx, s.remote(r), s.acked(r.Topic, r.Offset)) })
	}
}

// remote is the record to write on the target.
func (s *Source) remote(r *kgo.Record) *kgo.Record {
	return &kgo.Record{
		Topic:     s.flow.Policy.FormatRemoteTopic(s.flow.Source, r.Topic),
		Partition: r.Partition,
		Key:       r.Key,
		Value:     r.Value,
		Headers:   r.Headers,
		Timestamp: r.Timestamp,
	}
}

// copyTransaction writes a poll's records and their source offsets in one
// transaction: a restart resumes exactly after the last committed one.
func (s *Source) copyTransaction(ctx context.Context, cl *kgo.Client, fs kgo.Fetches) error {
	if fs.NumRecords() == 0 {
		return nil
	}
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	last := map[partitionKey]int64{}
	fs.EachRecord(func(r *kgo.Record) {
		cl.Produce(ctx, s.remote(r), s.acked(r.Topic, r.Offset))
		last[partitionKey{r.Topic, r.Partition}] = r.Offset
	})
	for k, off := range last {
		cl.Produce(ctx, &kgo.Record{Topic: s.flow.OffsetsTopic(), Key: sourceOffsetKey(s.flow.Source, k.topic, k.partition), Value: sourceOffsetValue(off)}, nil)
	}
	ferr := cl.Flush(ctx)
	if err := s.failure(); ferr == nil && err != nil {
		ferr = err
	}
	commit := kgo.TryCommit
	if ferr != nil {
		commit = kgo.TryAbort
	}
	if err := cl.EndTransaction(ctx, commit); err != nil {
		return err
	}
	if ferr != nil {
		return ferr
	}
	s.mu.Lock()
	for k := range last {
		if p := s.parts[k]; p != nil {
			p.dirty = false
		}
	}
	s.mu.Unlock()
	return nil
}

// acked returns the produce callback of a copied record: it advances the
// partition's progress and decides whether to write an offset sync.
func (s *Source) acked(topic string, upstream int64) func(*kgo.Record, error) {
	return func(r *kgo.Record, err error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			if s.failed == nil && !errors.Is(err, context.Canceled) {
				s.failed = fmt.Errorf("writing %s[%d]: %w", r.Topic, r.Partition, err)
			}
			return
		}
		if s.failed != nil {
			return // progress stops at the first failure
		}
		k := partitionKey{topic, r.Partition}
		p := s.parts[k]
		if p == nil {
			p = &partState{syncUp: -1, syncDown: -1, prevUp: -1, prevDown: -1}
			s.parts[k] = p
		}
		// Kafka's rule (MirrorSourceTask.PartitionState), with offset.lag.max
		// also bounding the upstream distance between syncs so that a
		// translated checkpoint re-reads fewer than offset.lag.max records.
		down := r.Offset
		if p.syncDown < 0 || upstream-p.syncUp >= s.flow.OffsetLagMax ||
			down-(p.syncDown+upstream-p.syncUp) >= s.flow.OffsetLagMax ||
			upstream-p.prevUp != 1 || down < p.prevDown {
			p.syncUp, p.syncDown = upstream, down
			s.pending = append(s.pending, OffsetSync{Topic: topic, Partition: r.Partition, Upstream: upstream, Downstream: down})
		}
		p.prevUp, p.prevDown = upstream, down
		p.progress, p.dirty = upstream, true
	}
}

func (s *Source) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// writeSyncs writes the pending offset syncs; with delayed, partitions
// whose last record has no sync get one (Kafka's delayed syncs), so that a
// group committed at the end of a burst translates exactly.
func (s *Source) writeSyncs(ctx context.Context, cl *kgo.Client, delayed bool) {
	s.mu.Lock()
	if delayed {
		for k, p := range s.parts {
			if p.prevUp >= 0 && p.prevUp != p.syncUp {
				p.syncUp, p.syncDown = p.prevUp, p.prevDown
				s.pending = append(s.pending, OffsetSync{Topic: k.topic, Partition: k.partition, Upstream: p.prevUp, Downstream: p.prevDown})
			}
		}
	}
	out := s.pending
	s.pending = nil
	s.mu.Unlock()
	topic := s.flow.Policy.OffsetSyncsTopic(s.flow.Target)
	for _, o := range out {
		// Offset syncs are hints: one lost makes translation more
		// conservative, never wrong.
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: 0, Key: o.Key(), Value: o.Value()}, nil)
	}
}

// writeProgress stores the acknowledged source offsets (at-least-once mode).
func (s *Source) writeProgress(ctx context.Context, cl *kgo.Client) error {
	s.mu.Lock()
	var recs []*kgo.Record
	for k, p := range s.parts {
		if p.dirty {
			recs = append(recs, &kgo.Record{Topic: s.flow.OffsetsTopic(), Key: sourceOffsetKey(s.flow.Source, k.topic, k.partition), Value: sourceOffsetValue(p.progress)})
			p.dirty = false
		}
	}
	s.mu.Unlock()
	if len(recs) == 0 {
		return nil
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// background refreshes topics, syncs configs and ACLs, and (without
// exactly-once, or on a Connect worker) writes offset syncs, and the source
// offsets unless the worker stores them.
func (s *Source) background(ctx context.Context, topics *topicSync, consumer *kgo.Client, progress func(partitionKey) (int64, bool), tgtCl, syncCl *kgo.Client) {
	f := s.flow
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	now := time.Now()
	lastRefresh, lastConfigs, lastACLs, lastFlush, lastDelayed := now, now, now, now, now
	for {
		select {
		case <-ctx.Done():
			if s.workerOffsets || !f.ExactlyOnce {
				// Final flush of what was acknowledged before the stop.
				fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				s.writeSyncs(fctx, syncCl, true)
				_ = syncCl.Flush(fctx)
				if !s.workerOffsets {
					_ = s.writeProgress(fctx, tgtCl)
				}
				cancel()
			}
			return
		case now = <-tick.C:
		}
		if s.workerOffsets || !f.ExactlyOnce {
			delayed := now.Sub(lastDelayed) >= time.Second
			if delayed {
				lastDelayed = now
			}
			s.writeSyncs(ctx, syncCl, delayed)
			if !s.workerOffsets && now.Sub(lastFlush) >= f.OffsetFlushInterval {
				lastFlush = now
				if err := s.writeProgress(ctx, tgtCl); err != nil && ctx.Err() == nil {
					s.log.Warn("storing source offsets", "err", err)
				}
			}
		}
		if f.RefreshTopics && now.Sub(lastRefresh) >= f.RefreshTopicsInterval {
			lastRefresh = now
			if err := topics.refresh(ctx, consumer, progress); err != nil && ctx.Err() == nil {
				s.log.Warn("refreshing topics", "err", err)
			}
		}
		if f.SyncTopicConfigs && now.Sub(lastConfigs) >= f.SyncTopicConfigsInterval {
			lastConfigs = now
			topics.syncConfigs(ctx)
		}
		if f.SyncTopicACLs && now.Sub(lastACLs) >= f.SyncTopicACLsInterval {
			lastACLs = now
			topics.syncACLs(ctx)
		}
	}
}
