package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TopicLog is one of distributed mode's internal topics (Kafka's
// KafkaBasedLog): a compacted topic read from the start by one goroutine,
// each record handed to apply in order, and written to with acks=all.
// Under exactly-once source support it is read with read_committed, so the
// offsets of an aborted source transaction are never applied.
type TopicLog struct {
	topic     string
	committed bool // read_committed: the end is the last stable offset
	cl        *kgo.Client
	adm       *kadm.Client
	apply     func(r *kgo.Record)
	log       *slog.Logger

	mu   sync.Mutex // guards read (the next offset to read per partition)
	read map[int32]int64
	cond *sync.Cond

	cancel context.CancelFunc
	done   chan struct{}
}

// OpenTopicLog creates the topic if needed (compacted) and starts reading it.
func OpenTopicLog(cfg *Config, log *slog.Logger, topic string, partitions int32, rf int16, apply func(*kgo.Record)) (*TopicLog, error) {
	opts := append(cfg.ClientOpts("connect-log-"+topic, log),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	if cfg.Fencing() {
		// Control records are kept so that the read position passes the
		// commit and abort markers and reaches the last stable offset.
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	compact := "compact"
	if err := EnsureTopic(ctx, cl, topic, partitions, rf, map[string]*string{"cleanup.policy": &compact}); err != nil {
		cl.Close()
		return nil, fmt.Errorf("creating %s: %w", topic, err)
	}
	lctx, lcancel := context.WithCancel(context.Background())
	l := &TopicLog{topic: topic, committed: cfg.Fencing(), cl: cl, adm: kadm.NewClient(cl), apply: apply, log: log, read: map[int32]int64{}, cancel: lcancel, done: make(chan struct{})}
	l.cond = sync.NewCond(&l.mu)
	go l.run(lctx)
	return l, nil
}

func (l *TopicLog) run(ctx context.Context) {
	defer close(l.done)
	for {
		fs := l.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				l.log.Warn("reading an internal topic", "topic", t, "partition", p, "err", err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				l.apply(r)
			}
			l.mu.Lock()
			l.read[r.Partition] = r.Offset + 1
			l.mu.Unlock()
		})
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	}
}

// ReadToEnd waits until every record written before the call was applied.
func (l *TopicLog) ReadToEnd(ctx context.Context) error {
	// A topic just created may not be in every broker's metadata yet.
	var ends kadm.ListedOffsets
	for {
		var err error
		if l.committed {
			ends, err = l.adm.ListCommittedOffsets(ctx, l.topic)
		} else {
			ends, err = l.adm.ListEndOffsets(ctx, l.topic)
		}
		if err == nil {
			err = ends.Error()
		}
		if err == nil && len(ends[l.topic]) > 0 {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("listing the end offsets of %s: %v", l.topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		behind := false
		for p, end := range want {
			if l.read[p] < end {
				behind = true
			}
		}
		if !behind {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("reading %s to its end: %w", l.topic, ctx.Err())
		}
		l.cond.Wait()
	}
}

// Offset is the next offset to read of partition 0 (the config topic's
// position).
func (l *TopicLog) Offset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.read[0]
}

// Write produces keyed records and waits for their acknowledgement.
func (l *TopicLog) Write(ctx context.Context, recs ...*kgo.Record) error {
	for _, r := range recs {
		r.Topic = l.topic
	}
	return l.cl.ProduceSync(ctx, recs...).FirstErr()
}

// WriteAsync produces a record without waiting (statuses).
func (l *TopicLog) WriteAsync(r *kgo.Record) {
	r.Topic = l.topic
	l.cl.Produce(context.Background(), r, func(_ *kgo.Record, err error) {
		if err != nil {
			l.log.Warn("writing an internal topic", "topic", l.topic, "err", err)
		}
	})
}

// Close stops reading and closes the client (after pending writes).
func (l *TopicLog) Close() {
	l.cancel()
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = l.cl.Flush(ctx)
	cancel()
	l.cl.Close()
}

// TopicOffsets is distributed mode's offset.storage.topic: Kafka Connect's
// offset records (key ["<connector>",{partition}], value {offset} JSON),
// read into memory and written with acks=all.
type TopicOffsets struct {
	*MemoryOffsets
	tlog *TopicLog
}

// OpenTopicOffsets opens the offset topic and reads it to its end.
func OpenTopicOffsets(cfg *Config, log *slog.Logger) (*TopicOffsets, error) {
	t := &TopicOffsets{MemoryOffsets: NewMemoryOffsets()}
	l, err := OpenTopicLog(cfg, log, cfg.OffsetTopic, cfg.OffsetPartitions, cfg.OffsetRF, func(r *kgo.Record) { t.Apply(r.Key, r.Value) })
	if err != nil {
		return nil, err
	}
	t.tlog = l
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := l.ReadToEnd(ctx); err != nil {
		l.Close()
		return nil, err
	}
	return t, nil
}

// Put implements OffsetStore: written to the topic (each key to the
// partition of Kafka's default partitioner, murmur2, as franz-go's), then
// kept in memory.
func (t *TopicOffsets) Put(ctx context.Context, connector string, entries []OffsetEntry) error {
	kvs, err := encodeEntries(connector, entries)
	if err != nil {
		return err
	}
	recs := make([]*kgo.Record, len(kvs))
	for i, kv := range kvs {
		recs[i] = &kgo.Record{Key: kv[0], Value: kv[1]}
	}
	if err := t.tlog.Write(ctx, recs...); err != nil {
		return err
	}
	for _, kv := range kvs {
		t.Apply(kv[0], kv[1])
	}
	return nil
}

// ReadToEnd catches up with offsets other workers wrote.
func (t *TopicOffsets) ReadToEnd(ctx context.Context) error { return t.tlog.ReadToEnd(ctx) }

// Close stops the reader.
func (t *TopicOffsets) Close() { t.tlog.Close() }
