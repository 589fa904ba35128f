package tiered

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// MetadataTopic is where remote segment metadata lives, as Kafka's
// TopicBasedRemoteLogMetadataManager keeps it: every state change of every
// remote segment is a record keyed by its partition, so all changes of a
// partition are in one metadata partition, in order.
const MetadataTopic = "__remote_log_metadata"

// metadataEvent is one record of MetadataTopic. Its fields follow Kafka's
// RemoteLogSegmentMetadataRecord, RemoteLogSegmentMetadataUpdateRecord and
// RemotePartitionDeleteMetadataRecord; the encoding is JSON with a version.
type metadataEvent struct {
	Version int    `json:"version"`
	Kind    string `json:"kind"` // "segment", "update" or "partition-delete"

	TopicID   string `json:"topic_id"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	SegmentID string `json:"segment_id,omitempty"`

	StartOffset    int64        `json:"start_offset,omitempty"`
	EndOffset      int64        `json:"end_offset,omitempty"`
	MaxTimestamp   int64        `json:"max_timestamp_ms,omitempty"`
	BrokerID       int32        `json:"broker_id"`
	EventTimestamp int64        `json:"event_timestamp_ms"`
	LeaderEpochs   []EpochEntry `json:"segment_leader_epochs,omitempty"`
	SizeInBytes    int64        `json:"segment_size_in_bytes,omitempty"`
	CustomMetadata []byte       `json:"custom_metadata,omitempty"`
	State          SegmentState `json:"state"`
}

// PartitionKey is Kafka's TopicIdPartition string, the record key that
// places a partition's events (by murmur2, as Kafka's keyed records).
func PartitionKey(topicID [16]byte, topic string, partition int32) string {
	return fmt.Sprintf("%s:%s-%d", base64.RawURLEncoding.EncodeToString(topicID[:]), topic, partition)
}

type partitionKey struct {
	topicID   [16]byte
	partition int32
}

// partitionSegments is what the metadata topic says of one partition.
type partitionSegments struct {
	segs    map[[16]byte]*SegmentMetadata
	deleted bool // a partition-delete event was seen
}

// MetadataStore keeps the remote segment metadata of every partition, read
// from MetadataTopic by a consumer of all its partitions, and writes new
// events through a producer, waiting until its own consumer has applied
// them (so a write is visible to the next read on this broker).
type MetadataStore struct {
	cl *kgo.Client

	mu      sync.Mutex
	cond    *sync.Cond
	parts   map[partitionKey]*partitionSegments
	applied map[int32]int64 // metadata partition → next offset applied
	err     error           // the consumer's fatal error, if any

	cancel context.CancelFunc
	done   chan struct{}
}

// OpenMetadataStore starts reading MetadataTopic with a client made from
// opts (the broker's own connection to the cluster). The topic must exist.
func OpenMetadataStore(ctx context.Context, opts ...kgo.Opt) (*MetadataStore, error) {
	all := append([]kgo.Opt{
		kgo.ConsumeTopics(MetadataTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		return nil, err
	}
	s := &MetadataStore{cl: cl, parts: map[partitionKey]*partitionSegments{}, applied: map[int32]int64{}, done: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	cctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go s.consume(cctx)
	return s, nil
}

// Close stops the consumer and the client.
func (s *MetadataStore) Close() {
	s.cancel()
	<-s.done
	s.cl.Close()
}

func (s *MetadataStore) consume(ctx context.Context) {
	defer close(s.done)
	for {
		fs := s.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			s.mu.Lock()
			s.err = fmt.Errorf("metadata store closed")
			s.cond.Broadcast()
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			var ev metadataEvent
			if err := json.Unmarshal(r.Value, &ev); err == nil && ev.Version == 1 {
				s.applyLocked(&ev)
			}
			s.applied[r.Partition] = r.Offset + 1
		})
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

func decodeID(s string) (id [16]byte, err error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("bad id %q", s)
	}
	copy(id[:], b)
	return id, nil
}

func (s *MetadataStore) applyLocked(ev *metadataEvent) {
	tid, err := decodeID(ev.TopicID)
	if err != nil {
		return
	}
	pk := partitionKey{tid, ev.Partition}
	ps := s.parts[pk]
	if ps == nil {
		ps = &partitionSegments{segs: map[[16]byte]*SegmentMetadata{}}
		s.parts[pk] = ps
	}
	switch ev.Kind {
	case "segment":
		sid, err := decodeID(ev.SegmentID)
		if err != nil {
			return
		}
		md := &SegmentMetadata{
			SegmentID:   SegmentID{TopicID: tid, Topic: ev.Topic, Partition: ev.Partition, ID: sid},
			StartOffset: ev.StartOffset, EndOffset: ev.EndOffset, MaxTimestamp: ev.MaxTimestamp,
			BrokerID: ev.BrokerID, EventTimestamp: ev.EventTimestamp, LeaderEpochs: ev.LeaderEpochs,
			SizeInBytes: ev.SizeInBytes, State: CopyStarted,
		}
		ps.segs[sid] = md
	case "update":
		sid, err := decodeID(ev.SegmentID)
		if err != nil {
			return
		}
		md := ps.segs[sid]
		if md == nil || !md.State.CanMoveTo(ev.State) {
			return // an event out of order is ignored, as Kafka's cache does
		}
		md.State, md.EventTimestamp, md.BrokerID = ev.State, ev.EventTimestamp, ev.BrokerID
		if ev.CustomMetadata != nil {
			md.CustomMetadata = ev.CustomMetadata
		}
		if ev.State == DeleteFinished {
			delete(ps.segs, sid)
		}
	case "partition-delete":
		ps.deleted = true
	}
}

// write produces one event and waits until this store has applied it.
func (s *MetadataStore) write(ctx context.Context, ev *metadataEvent) error {
	ev.Version = 1
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	tid, _ := decodeID(ev.TopicID)
	rec := &kgo.Record{Topic: MetadataTopic, Key: []byte(PartitionKey(tid, ev.Topic, ev.Partition)), Value: b}
	if err := s.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return fmt.Errorf("writing remote log metadata: %w", err)
	}
	return s.waitApplied(ctx, map[int32]int64{rec.Partition: rec.Offset + 1})
}

// waitApplied blocks until the consumer has applied every metadata
// partition p up to (not including) offset ends[p], the consumer fails, or
// ctx ends.
func (s *MetadataStore) waitApplied(ctx context.Context, ends map[int32]int64) error {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, end := range ends {
		for s.applied[p] < end {
			if s.err != nil {
				return s.err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			s.cond.Wait()
		}
	}
	return nil
}

// AddSegment records a copy that is starting (COPY_SEGMENT_STARTED).
func (s *MetadataStore) AddSegment(ctx context.Context, md SegmentMetadata) error {
	return s.write(ctx, &metadataEvent{Kind: "segment",
		TopicID: b64(md.TopicID), Topic: md.Topic, Partition: md.Partition, SegmentID: b64(md.ID),
		StartOffset: md.StartOffset, EndOffset: md.EndOffset, MaxTimestamp: md.MaxTimestamp,
		BrokerID: md.BrokerID, EventTimestamp: md.EventTimestamp, LeaderEpochs: md.LeaderEpochs,
		SizeInBytes: md.SizeInBytes, State: CopyStarted})
}

// UpdateSegment moves a segment to a new state; an illegal move is refused.
func (s *MetadataStore) UpdateSegment(ctx context.Context, id SegmentID, state SegmentState, brokerID int32, custom []byte) error {
	s.mu.Lock()
	var cur *SegmentMetadata
	if ps := s.parts[partitionKey{id.TopicID, id.Partition}]; ps != nil {
		cur = ps.segs[id.ID]
	}
	s.mu.Unlock()
	if cur == nil {
		return fmt.Errorf("remote segment %s is not known", id)
	}
	if !cur.State.CanMoveTo(state) {
		return fmt.Errorf("remote segment %s cannot move from %s to %s", id, cur.State, state)
	}
	return s.write(ctx, &metadataEvent{Kind: "update", TopicID: b64(id.TopicID), Topic: id.Topic, Partition: id.Partition,
		SegmentID: b64(id.ID), BrokerID: brokerID, EventTimestamp: time.Now().UnixMilli(), State: state, CustomMetadata: custom})
}

// DeletePartition records that a partition's remote data is being removed
// (its topic was deleted).
func (s *MetadataStore) DeletePartition(ctx context.Context, topicID [16]byte, topic string, partition int32, brokerID int32) error {
	return s.write(ctx, &metadataEvent{Kind: "partition-delete", TopicID: b64(topicID), Topic: topic, Partition: partition,
		BrokerID: brokerID, EventTimestamp: time.Now().UnixMilli()})
}

// Segments returns copies of a partition's known segments in the given
// states (all when none), ordered by start offset.
func (s *MetadataStore) Segments(topicID [16]byte, partition int32, states ...SegmentState) []SegmentMetadata {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.parts[partitionKey{topicID, partition}]
	if ps == nil {
		return nil
	}
	out := make([]SegmentMetadata, 0, len(ps.segs))
	for _, md := range ps.segs {
		if len(states) == 0 || containsState(states, md.State) {
			out = append(out, *md)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].StartOffset != out[j].StartOffset {
			return out[i].StartOffset < out[j].StartOffset
		}
		return out[i].EndOffset < out[j].EndOffset
	})
	return out
}

// PartitionRef names a partition the store holds remote segments of.
type PartitionRef struct {
	TopicID   [16]byte
	Topic     string
	Partition int32
	// Deleted says a partition-delete event was seen: its topic is gone
	// and its segments are being removed.
	Deleted bool
	// LastEvent is the newest event timestamp of its segments (ms).
	LastEvent int64
}

// Partitions returns the partitions that still have segments not deleted.
func (s *MetadataStore) Partitions() []PartitionRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PartitionRef
	for pk, ps := range s.parts {
		if len(ps.segs) == 0 {
			continue
		}
		r := PartitionRef{TopicID: pk.topicID, Partition: pk.partition, Deleted: ps.deleted}
		for _, md := range ps.segs {
			r.Topic = md.Topic
			r.LastEvent = max(r.LastEvent, md.EventTimestamp)
		}
		out = append(out, r)
	}
	return out
}

func containsState(ss []SegmentState, s SegmentState) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// CaughtUp waits until the store has read every metadata partition to its
// end as of the call (a new leader reads before it copies).
func (s *MetadataStore) CaughtUp(ctx context.Context, ends map[int32]int64) error {
	return s.waitApplied(ctx, ends)
}

func b64(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }
