package tiered

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/storage"
)

// Manager is Kafka's RemoteLogManager on one node. One goroutine (Run)
// visits every hosted partition of a tiered topic each
// remote.log.manager.task.interval.ms: every replica learns from the
// metadata store what the remote tier holds (so local retention may delete
// it); the leader copies rolled segments up to the last stable offset,
// removes orphans (copies that never finished) and applies the topic's
// total retention to the remote tier. Reads (Read) run on the fetching
// connection's goroutine, with no partition or log lock held.
type Manager struct {
	NodeID   int32
	Store    RemoteStorage
	Meta     *MetadataStore
	Hosted   func() []*partition.Partition
	Interval time.Duration
	Logger   *slog.Logger
	Now      func() time.Time
	// TopicExists and SweepOwner, when set, remove the remote data of
	// deleted topics: on the one node SweepOwner names, each round deletes
	// the segments of partitions whose topic the metadata image no longer
	// has.
	TopicExists func(id [16]byte) bool
	SweepOwner  func() bool
	// CopyQuota and FetchQuota are KIP-956's byte rates (nil: none). A
	// copy waits while the copy rate is over its quota; a remote read
	// over the fetch quota returns no records, so the consumer's fetch
	// parks as one with no data and asks again.
	CopyQuota, FetchQuota *Quota

	// Counters for /metrics, read with atomic loads.
	BytesCopied    atomic.Int64
	SegmentsCopied atomic.Int64
	BytesFetched   atomic.Int64
	FetchRequests  atomic.Int64
	CopyErrors     atomic.Int64
	FetchErrors    atomic.Int64
	DeleteErrors   atomic.Int64
	// SegmentsDeleted counts remote segments whose deletion finished.
	SegmentsDeleted atomic.Int64

	// Gauges set at the end of each Tick over the partitions led here:
	// what is rolled below the last stable offset and not yet copied, and
	// what the remote tier holds. ticked says a Tick has set them.
	CopyLagBytes       atomic.Int64
	CopyLagSegments    atomic.Int64
	RemoteLogSizeBytes atomic.Int64
	ticked             atomic.Bool

	index indexCache
}

// Run does the periodic work until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(m.Interval)
	defer t.Stop()
	for {
		m.Tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Tick does one round of the periodic work over every tiered partition.
func (m *Manager) Tick(ctx context.Context) {
	var lagBytes, lagSegments, remoteBytes int64
	for _, p := range m.Hosted() {
		if ctx.Err() != nil {
			return
		}
		if !p.Log().Config().RemoteStorageEnable {
			m.untiered(ctx, p)
			continue
		}
		m.sync(p)
		if !p.IsLeader() {
			continue
		}
		orphansErr := m.removeOrphans(ctx, p)
		if orphansErr != nil {
			m.DeleteErrors.Add(1)
			m.Logger.Warn("removing unfinished remote copies", "topic", p.Topic, "partition", p.Index, "err", orphansErr)
		}
		// A store that could not delete the last round's unfinished copy
		// would most likely fail this one too: copying waits for the next
		// round rather than leave one more orphan per round of an outage.
		if orphansErr == nil && !p.Config().RemoteLogCopyDisable {
			if err := m.copy(ctx, p); err != nil {
				m.CopyErrors.Add(1)
				m.Logger.Warn("copying segments to remote storage", "topic", p.Topic, "partition", p.Index, "err", err)
			}
		}
		if err := m.expire(ctx, p); err != nil {
			m.DeleteErrors.Add(1)
			m.Logger.Warn("remote retention", "topic", p.Topic, "partition", p.Index, "err", err)
		}
		m.sync(p)
		log := p.Log()
		for _, c := range log.TierCandidates(log.RemoteCopiedUpTo(), min(p.HighWatermark(), p.LastStableOffset())) {
			lagBytes += c.Size
			lagSegments++
		}
		for _, s := range m.Meta.Segments(p.TopicID, p.Index, CopyFinished) {
			remoteBytes += s.SizeInBytes
		}
	}
	if m.SweepOwner != nil && m.SweepOwner() {
		if err := m.sweepDeletedTopics(ctx); err != nil {
			m.DeleteErrors.Add(1)
			m.Logger.Warn("removing the remote data of deleted topics", "err", err)
		}
	}
	m.CopyLagBytes.Store(lagBytes)
	m.CopyLagSegments.Store(lagSegments)
	m.RemoteLogSizeBytes.Store(remoteBytes)
	m.ticked.Store(true)
}

// untiered looks after a partition of a topic that is not tiered: when
// tiering was turned off with remote.log.delete.on.disable=true (KIP-950)
// its leader deletes the remote segments, and every replica forgets the
// remote tier once they are gone.
func (m *Manager) untiered(ctx context.Context, p *partition.Partition) {
	segs := m.Meta.Segments(p.TopicID, p.Index)
	if len(segs) == 0 && p.Log().RemoteCopiedUpTo() < 0 {
		return
	}
	if len(segs) > 0 && p.IsLeader() && p.Config().RemoteLogDeleteOnDisable {
		for _, s := range segs {
			if err := m.deleteSegment(ctx, s); err != nil {
				m.DeleteErrors.Add(1)
				m.Logger.Warn("deleting the remote data of a topic no longer tiered", "topic", p.Topic, "partition", p.Index, "err", err)
				break
			}
		}
		m.Logger.Info("deleted the remote data of a topic no longer tiered", "topic", p.Topic, "partition", p.Index, "segments", len(segs))
	}
	m.sync(p)
}

// sync tells the log what the remote tier holds.
func (m *Manager) sync(p *partition.Partition) {
	segs := m.Meta.Segments(p.TopicID, p.Index, CopyFinished)
	start, upTo := int64(-1), int64(-1)
	for _, s := range segs {
		if start < 0 {
			start = s.StartOffset
		}
		upTo = max(upTo, s.EndOffset)
	}
	p.Log().SetRemoteState(start, upTo)
}

func newSegmentID() (id [16]byte) {
	if _, err := rand.Read(id[:]); err != nil {
		panic(err)
	}
	return id
}

// copy uploads the rolled segments past what the remote tier holds, oldest
// first, each recorded COPY_SEGMENT_STARTED before its upload and
// COPY_SEGMENT_FINISHED after it.
func (m *Manager) copy(ctx context.Context, p *partition.Partition) error {
	log := p.Log()
	upTo := min(p.HighWatermark(), p.LastStableOffset())
	epoch := p.LeaderEpoch()
	for _, c := range log.TierCandidates(log.RemoteCopiedUpTo(), upTo) {
		if ctx.Err() != nil || !p.IsLeader() || p.LeaderEpoch() != epoch {
			return ctx.Err()
		}
		// As Kafka's copier: wait while over the quota, then record the
		// segment's size before copying it.
		for {
			over, wait := m.CopyQuota.Exceeded()
			if !over {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
		}
		if !p.IsLeader() || p.LeaderEpoch() != epoch {
			return nil
		}
		m.CopyQuota.Record(c.Size)
		md := SegmentMetadata{
			SegmentID:      SegmentID{TopicID: p.TopicID, Topic: p.Topic, Partition: p.Index, ID: newSegmentID()},
			StartOffset:    c.BaseOffset,
			EndOffset:      c.NextOffset - 1,
			MaxTimestamp:   c.MaxTimestamp,
			BrokerID:       m.NodeID,
			EventTimestamp: m.Now().UnixMilli(),
			SizeInBytes:    c.Size,
			State:          CopyStarted,
		}
		for _, e := range c.LeaderEpochs {
			md.LeaderEpochs = append(md.LeaderEpochs, EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset})
		}
		if err := m.Meta.AddSegment(ctx, md); err != nil {
			return err
		}
		custom, err := m.Store.Copy(ctx, md, SegmentData{
			Log: c.LogPath, OffsetIndex: c.OffsetIndexPath, TimeIndex: c.TimeIndexPath,
			TxnIndex: c.TxnIndexPath, ProducerSnapshot: c.ProducerSnapshotPath,
			LeaderEpochs: epochCheckpoint(c.LeaderEpochs),
		})
		if err != nil {
			// The STARTED record stays: the next round removes it as an
			// orphan, with whatever objects made it.
			return fmt.Errorf("segment %d-%d: %w", c.BaseOffset, c.NextOffset-1, err)
		}
		if err := m.Meta.UpdateSegment(ctx, md.SegmentID, CopyFinished, m.NodeID, custom); err != nil {
			return err
		}
		m.BytesCopied.Add(c.Size)
		m.SegmentsCopied.Add(1)
		m.sync(p)
		m.Logger.Info("copied segment to remote storage", "topic", p.Topic, "partition", p.Index,
			"start_offset", md.StartOffset, "end_offset", md.EndOffset, "bytes", c.Size)
	}
	return nil
}

// epochCheckpoint renders epochs in the leader-epoch-checkpoint format.
func epochCheckpoint(es []storage.EpochStart) []byte {
	b := []byte("0\n" + strconv.Itoa(len(es)) + "\n")
	for _, e := range es {
		b = append(b, strconv.Itoa(int(e.Epoch))+" "+strconv.FormatInt(e.StartOffset, 10)+"\n"...)
	}
	return b
}

// removeOrphans deletes the segments whose copy started but never finished
// (a leader that died or failed mid-upload). Only the leader calls it, and
// its own copies run on the same goroutine, so an unfinished copy seen here
// is never one in progress on this node; one in progress on a deposed
// leader loses: its COPY_SEGMENT_FINISHED comes after DELETE_SEGMENT_STARTED
// and is ignored by every reader of the metadata topic.
func (m *Manager) removeOrphans(ctx context.Context, p *partition.Partition) error {
	for _, md := range m.Meta.Segments(p.TopicID, p.Index, CopyStarted, DeleteStarted) {
		if err := m.deleteSegment(ctx, md); err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) deleteSegment(ctx context.Context, md SegmentMetadata) error {
	if md.State != DeleteStarted {
		if err := m.Meta.UpdateSegment(ctx, md.SegmentID, DeleteStarted, m.NodeID, nil); err != nil {
			return err
		}
	}
	if err := m.Store.Delete(ctx, md); err != nil {
		return err
	}
	m.index.drop(md.ID)
	if err := m.Meta.UpdateSegment(ctx, md.SegmentID, DeleteFinished, m.NodeID, nil); err != nil {
		return err
	}
	m.SegmentsDeleted.Add(1)
	return nil
}

// deletedTopicGrace is how old the newest event of a partition must be
// before its remote data is removed for want of its topic in this node's
// metadata image: an image behind the cluster's may not know a topic just
// created, whose first copy comes a segment roll later, within the grace.
const deletedTopicGrace = 10 * time.Second

// sweepDeletedTopics deletes the remote segments of partitions whose topic
// is gone, after recording the partition's deletion.
func (m *Manager) sweepDeletedTopics(ctx context.Context) error {
	for _, r := range m.Meta.Partitions() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if m.TopicExists(r.TopicID) {
			continue
		}
		if !r.Deleted {
			if m.Now().UnixMilli()-r.LastEvent < deletedTopicGrace.Milliseconds() {
				continue
			}
			if err := m.Meta.DeletePartition(ctx, r.TopicID, r.Topic, r.Partition, m.NodeID); err != nil {
				return err
			}
		}
		segs := m.Meta.Segments(r.TopicID, r.Partition)
		for _, s := range segs {
			if err := m.deleteSegment(ctx, s); err != nil {
				return err
			}
		}
		m.Logger.Info("deleted the remote data of a deleted topic", "topic", r.Topic, "partition", r.Partition, "segments", len(segs))
	}
	return nil
}

// expire applies retention.ms and retention.bytes over both tiers: remote
// segments wholly older than retention.ms, and the oldest while the
// partition's size over both tiers exceeds retention.bytes; and removes
// the remote segments wholly below the log start over both tiers (records
// deleted by DeleteRecords).
func (m *Manager) expire(ctx context.Context, p *partition.Partition) error {
	cfg := p.Log().Config()
	segs := m.Meta.Segments(p.TopicID, p.Index, CopyFinished)
	if len(segs) == 0 {
		return nil
	}
	logStart := p.Log().EarliestOffset()
	nowMs := m.Now().UnixMilli()
	// The partition's size over both tiers: the remote segments, plus the
	// rolled local segments past them (what is in both is counted once;
	// the active segment is left out, which errs towards keeping data).
	var total int64
	for _, s := range segs {
		total += s.SizeInBytes
	}
	for _, c := range p.Log().TierCandidates(p.Log().RemoteCopiedUpTo(), p.Log().LogEndOffset()) {
		total += c.Size
	}
	var doomed []SegmentMetadata
	var reasons []string
	for _, s := range segs {
		byStart := s.EndOffset < logStart
		byTime := cfg.Delete && cfg.RetentionMs >= 0 && nowMs-s.MaxTimestamp > cfg.RetentionMs
		bySize := cfg.Delete && cfg.RetentionBytes >= 0 && total-s.SizeInBytes >= cfg.RetentionBytes
		if !byStart && !byTime && !bySize {
			break
		}
		reason := "retention"
		if byStart {
			reason = "log start offset"
		}
		doomed = append(doomed, s)
		reasons = append(reasons, reason)
		total -= s.SizeInBytes
	}
	for i, s := range doomed {
		if err := m.deleteSegment(ctx, s); err != nil {
			return err
		}
		m.Logger.Info("deleted remote segment", "topic", p.Topic, "partition", p.Index,
			"start_offset", s.StartOffset, "end_offset", s.EndOffset, "reason", reasons[i])
	}
	return nil
}

// ErrOffsetNotRemote is returned by Read for an offset the remote tier
// does not hold.
var ErrOffsetNotRemote = errors.New("offset not in remote storage")
