package group

// Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete and expiry
// (Kafka's OffsetMetadataManager).

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// CommitRequest is one OffsetCommit.
type CommitRequest struct {
	GroupID string
	// Generation is -1 and MemberID "" for a standalone commit (a group
	// that only stores offsets), which Kafka accepts for empty groups.
	Generation int32
	MemberID   string
	InstanceID *string
	// Retention is OffsetCommit v2-v4's retention_time_ms; -1 (or v0, v1,
	// v5+) means offsets.retention.minutes applies.
	Retention time.Duration
	// RetentionSet is whether Retention was given (not -1).
	RetentionSet bool
	// GroupIDNotFoundForUnknown: v9+ answers GROUP_ID_NOT_FOUND instead of
	// ILLEGAL_GENERATION for a generation-based commit to a missing group.
	GroupIDNotFoundForUnknown bool
	Offsets                   []CommitOffset
}

// CommitOffset is one partition's commit.
type CommitOffset struct {
	TopicPartition
	Offset      int64
	LeaderEpoch int32
	Metadata    *string
	// CommitTimestamp is v1's explicit commit time (Unix ms), or -1.
	CommitTimestamp int64
}

// CommitOffsets validates the committer against the group and, when
// allowed, appends the offsets and only then makes them visible. It
// returns a group-level error (every partition gets it) or one error per
// offset.
func (c *Coordinator) CommitOffsets(ctx context.Context, req CommitRequest) (error, []error) {
	if err := c.CheckOwner(req.GroupID); err != nil {
		return err, nil
	}
	standalone := req.Generation < 0
	g, err := c.lockGroup(req.GroupID, standalone)
	if err != nil {
		return err, nil
	}
	if g == nil {
		if req.GroupIDNotFoundForUnknown {
			return kerr.GroupIDNotFound, nil
		}
		return kerr.IllegalGeneration, nil
	}
	defer g.mu.Unlock()
	if err := g.validateCommitLocked(req); err != nil {
		g.removeIfUnusedLocked()
		return err, nil
	}
	now := c.now().UnixMilli()
	errs := make([]error, len(req.Offsets))
	var recs []kv
	var apply []int
	committed := make([]CommittedOffset, len(req.Offsets))
	for i, o := range req.Offsets {
		md := ""
		if o.Metadata != nil {
			md = *o.Metadata
		}
		if len(md) > c.cfg.OffsetMetadataMaxBytes {
			errs[i] = fmt.Errorf("%w: metadata of %d bytes exceeds offset.metadata.max.bytes %d",
				kerr.OffsetMetadataTooLarge, len(md), c.cfg.OffsetMetadataMaxBytes)
			continue
		}
		co := CommittedOffset{Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: md, CommitTimestamp: now, ExpireTimestamp: -1}
		if o.CommitTimestamp >= 0 {
			co.CommitTimestamp = o.CommitTimestamp
		}
		if req.RetentionSet {
			co.ExpireTimestamp = now + req.Retention.Milliseconds()
		}
		committed[i] = co
		recs = append(recs, kv{key: offsetCommitKey(g.id, o.TopicPartition), value: offsetCommitValue(co)})
		apply = append(apply, i)
	}
	// Visible only once appended: a fetch never returns an offset a
	// crash could lose.
	if err := c.appendRecords(g.partition, recs); err != nil {
		err = commitAppendError(err)
		for _, i := range apply {
			errs[i] = err
		}
		g.removeIfUnusedLocked()
		return nil, errs
	}
	for _, i := range apply {
		g.mu.offsets[req.Offsets[i].TopicPartition] = committed[i]
		g.supersedePendingLocked(req.Offsets[i].TopicPartition)
	}
	g.removeIfUnusedLocked()
	return nil, errs
}

// commitAppendError maps a failed offset append as Kafka does: a batch too
// large for the log is INVALID_COMMIT_OFFSET_SIZE.
func commitAppendError(err error) error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
			return fmt.Errorf("%w: %v", kerr.InvalidCommitOffsetSize, err)
		}
	}
	return err
}

// validateCommitLocked is Kafka's ClassicGroup.validateOffsetCommit.
func (g *Group) validateCommitLocked(req CommitRequest) error {
	if g.mu.consumer != nil {
		return g.validateConsumerCommitLocked(req)
	}
	if req.Generation < 0 && g.mu.state == StateEmpty {
		return nil // a standalone commit
	}
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		m, err := g.validateMemberLocked(req.MemberID, req.InstanceID)
		if err != nil {
			return err
		}
		if req.Generation != g.mu.generation {
			return kerr.IllegalGeneration
		}
		if g.mu.state == StateCompletingRebalance {
			// The member has its new generation but not yet its
			// assignment: it should not be committing now.
			return kerr.RebalanceInProgress
		}
		if g.mu.state == StateStable {
			g.scheduleSessionLocked(m)
		}
		return nil
	}
	// No member and no generation: only an empty group accepts that.
	return kerr.UnknownMemberID
}

// FetchedOffset is one partition's committed offset; Offset is -1 when
// none is committed.
type FetchedOffset struct {
	TopicPartition
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	Err         error
}

// FetchOffsets returns the group's committed offsets for the given
// partitions, or all of them when partitions is nil.
func (c *Coordinator) FetchOffsets(groupID string, partitions []TopicPartition) ([]FetchedOffset, error) {
	return c.FetchOffsetsAsMember(groupID, nil, partitions)
}

// FetchOffsetsAsMember is FetchOffsets for OffsetFetch v9+, which names the
// fetching member of a consumer-protocol group (KIP-848): a member that is
// not in the group is UNKNOWN_MEMBER_ID, one with another epoch
// STALE_MEMBER_EPOCH. A nil member (or member epoch -1 with no member id)
// is not checked, nor is any member of a classic group.
func (c *Coordinator) FetchOffsetsAsMember(groupID string, member *FetchingMember, partitions []TopicPartition) ([]FetchedOffset, error) {
	return c.FetchOffsetsStable(groupID, member, partitions, false)
}

// FetchOffsetsStable is FetchOffsetsAsMember with OffsetFetch's
// require_stable (v7+, KIP-447): a partition with an offset pending in an
// open transaction is UNSTABLE_OFFSET_COMMIT (offset -1), so the consumer
// retries until the transaction is decided.
func (c *Coordinator) FetchOffsetsStable(groupID string, member *FetchingMember, partitions []TopicPartition, requireStable bool) ([]FetchedOffset, error) {
	if err := c.CheckOwner(groupID); err != nil {
		return nil, err
	}
	g, err := c.lockGroup(groupID, false)
	if err != nil {
		return nil, err
	}
	var out []FetchedOffset
	if g == nil {
		for _, tp := range partitions {
			out = append(out, FetchedOffset{TopicPartition: tp, Offset: -1, LeaderEpoch: -1})
		}
		return out, nil
	}
	defer g.mu.Unlock()
	if err := g.validateConsumerFetchLocked(member); err != nil {
		return nil, err
	}
	if partitions == nil {
		for tp := range g.mu.offsets {
			partitions = append(partitions, tp)
		}
		sort.Slice(partitions, func(i, j int) bool {
			a, b := partitions[i], partitions[j]
			return a.Topic < b.Topic || (a.Topic == b.Topic && a.Partition < b.Partition)
		})
	}
	for _, tp := range partitions {
		if requireStable && g.hasPendingTxnOffsetLocked(tp) {
			out = append(out, FetchedOffset{TopicPartition: tp, Offset: -1, LeaderEpoch: -1,
				Err: fmt.Errorf("%w: %s-%d has an offset pending in an open transaction", kerr.UnstableOffsetCommit, tp.Topic, tp.Partition)})
			continue
		}
		o, ok := g.mu.offsets[tp]
		if !ok {
			out = append(out, FetchedOffset{TopicPartition: tp, Offset: -1, LeaderEpoch: -1})
			continue
		}
		out = append(out, FetchedOffset{TopicPartition: tp, Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata})
	}
	return out, nil
}

// DeleteOffsets removes committed offsets of a group that does not
// consume their topics (GROUP_SUBSCRIBED_TO_TOPIC per partition
// otherwise). It returns a group-level error or one per partition.
func (c *Coordinator) DeleteOffsets(groupID string, partitions []TopicPartition) (error, []error) {
	if err := c.CheckOwner(groupID); err != nil {
		return err, nil
	}
	g, err := c.lockGroup(groupID, false)
	if err != nil {
		return err, nil
	}
	if g == nil {
		return kerr.GroupIDNotFound, nil
	}
	defer g.mu.Unlock()
	var subscribed map[string]bool
	all := false
	if g.mu.state != StateEmpty {
		// Kafka's validateOffsetDelete: a non-empty classic group
		// must be a consumer group, whose subscriptions are known.
		var ok bool
		if subscribed, ok = g.subscribedTopicsLocked(); !ok {
			if g.mu.protocolType != "consumer" {
				return kerr.NonEmptyGroup, nil
			}
			all = true
		}
	}
	errs := make([]error, len(partitions))
	var recs []kv
	var del []TopicPartition
	for i, tp := range partitions {
		if all || subscribed[tp.Topic] {
			errs[i] = kerr.GroupSubscribedToTopic
			continue
		}
		if _, ok := g.mu.offsets[tp]; ok {
			recs = append(recs, kv{key: offsetCommitKey(g.id, tp)})
			del = append(del, tp)
		}
	}
	if err := c.appendRecords(g.partition, recs); err != nil {
		return err, nil
	}
	for _, tp := range del {
		delete(g.mu.offsets, tp)
	}
	return nil, errs
}

// runExpiry is the offsets.retention.check.interval.ms task.
func (c *Coordinator) runExpiry() {
	c.ExpireOffsets()
	c.mu.Lock()
	closed := c.mu.closed
	c.mu.Unlock()
	if !closed {
		c.expiryRun.Reset(c.cfg.RetentionCheckInterval)
	}
}

// ExpireOffsets removes offsets past their retention (KIP-211): an offset
// with an explicit expire timestamp expires then; otherwise the offsets of
// an Empty group expire offsets.retention.minutes after it became empty,
// those of a group without group management (standalone commits)
// offsets.retention.minutes after their commit, and those of a consumer
// group for topics it no longer subscribes to likewise after their commit.
// An Empty group left without offsets is deleted. It returns the number
// of offsets removed.
func (c *Coordinator) ExpireOffsets() int {
	removed := 0
	for _, g := range c.groupsSnapshot() {
		g.mu.Lock()
		if g.mu.state != StateDead {
			removed += g.expireOffsetsLocked(c.now().UnixMilli(), c.cfg.OffsetsRetention.Milliseconds())
		}
		g.mu.Unlock()
	}
	return removed
}

func (g *Group) expireOffsetsLocked(now, retention int64) int {
	var subscribed map[string]bool
	haveSubs := false
	if g.mu.state == StateStable || g.mu.state == StatePreparingRebalance || g.mu.state == StateCompletingRebalance {
		subscribed, haveSubs = g.subscribedTopicsLocked()
	}
	var expired []TopicPartition
	for tp, o := range g.mu.offsets {
		var gone bool
		switch {
		case o.ExpireTimestamp >= 0:
			gone = now >= o.ExpireTimestamp
		case g.mu.protocolType == "":
			gone = now-o.CommitTimestamp >= retention
		case g.mu.state == StateEmpty:
			gone = now-g.mu.stateTime >= retention
		case haveSubs && !subscribed[tp.Topic]:
			gone = now-o.CommitTimestamp >= retention
		}
		if gone {
			expired = append(expired, tp)
		}
	}
	var recs []kv
	for _, tp := range expired {
		recs = append(recs, kv{key: offsetCommitKey(g.id, tp)})
	}
	deleteGroup := g.mu.state == StateEmpty && len(expired) == len(g.mu.offsets) && len(g.mu.members) == 0 && len(g.mu.pending) == 0
	if deleteGroup {
		recs = append(recs, g.deletionRecordsLocked()...)
	}
	if len(recs) == 0 {
		return 0
	}
	if err := g.c.appendRecords(g.partition, recs); err != nil {
		g.c.logger.Warn("expiring offsets", "group", g.id, "err", err)
		return 0
	}
	for _, tp := range expired {
		delete(g.mu.offsets, tp)
	}
	if deleteGroup {
		g.c.removeGroupLocked(g)
		g.shutdownLocked(kerr.GroupIDNotFound)
		g.c.logger.Info("group expired", "group", g.id)
	}
	return len(expired)
}
