package group

// Transactional offsets (KIP-98, KIP-447): TxnOffsetCommit writes a
// consumer's offsets into the producer's transaction. They are written to
// __consumer_offsets as a transactional batch of the producer (its id and
// epoch, Kafka's offset commit records), held as pending per (group,
// producer) and become the group's committed offsets only when the
// transaction's commit marker reaches the partition (WriteTxnMarkers →
// CompleteTransaction); an abort marker drops them. A reload applies the
// same rule to the log: offsets of a transaction whose commit marker it
// reads are applied, those of an aborted one never, those of a
// transaction still open are pending again. As in Kafka
// (GroupMetadata.completePendingTxnOffsetCommit), a plain OffsetCommit of
// the same partition written after the transactional one wins over it.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/storage"
)

// pendingOffset is an offset committed in an open transaction.
type pendingOffset struct {
	CommittedOffset
	// superseded: a plain commit of the partition came after it in the
	// log, so the transaction's commit does not apply it.
	superseded bool
}

// supersedePendingLocked records that a plain commit of tp was appended
// after any pending transactional offset of tp.
func (g *Group) supersedePendingLocked(tp TopicPartition) {
	for _, pend := range g.mu.pendingTxn {
		if p, ok := pend[tp]; ok {
			p.superseded = true
			pend[tp] = p
		}
	}
}

// TxnCommitRequest is one TxnOffsetCommit.
type TxnCommitRequest struct {
	GroupID         string
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	// Generation, MemberID and InstanceID are KIP-447's (v3+): -1, "" and
	// nil from older clients, which are not checked against the group.
	Generation int32
	MemberID   string
	InstanceID *string
	Offsets    []CommitOffset
	// Guard is the KIP-890 verification made with the transaction
	// coordinator for the group's offsets partition, if one was needed.
	Guard storage.VerificationGuard
}

// VerifiedAppender is implemented by an OffsetsLog that appends under a
// KIP-890 verification guard (PartitionLog); without it the guard is not
// checked.
type VerifiedAppender interface {
	AppendVerified(partition int32, batch []byte, guard storage.VerificationGuard) error
}

// TxnCommitOffsets validates the committer as Kafka's
// validateOffsetCommit does for a transactional commit, appends the
// offsets to the producer's transaction and holds them as pending. It
// returns a group-level error or one error per offset.
func (c *Coordinator) TxnCommitOffsets(ctx context.Context, req TxnCommitRequest) (error, []error) {
	if err := c.CheckOwner(req.GroupID); err != nil {
		return err, nil
	}
	unchecked := req.Generation < 0 && req.MemberID == "" && req.InstanceID == nil
	g, err := c.lockGroup(req.GroupID, true)
	if err != nil {
		return err, nil
	}
	defer g.mu.Unlock()
	if !unchecked {
		if err := g.validateTxnCommitLocked(req); err != nil {
			g.removeIfUnusedLocked()
			return err, nil
		}
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
		committed[i] = CommittedOffset{Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: md, CommitTimestamp: now, ExpireTimestamp: -1}
		recs = append(recs, kv{key: offsetCommitKey(g.id, o.TopicPartition), value: offsetCommitValue(committed[i])})
		apply = append(apply, i)
	}
	if err := c.appendTxnRecords(g.partition, req.ProducerID, req.ProducerEpoch, req.Guard, recs); err != nil {
		err = commitAppendError(err)
		for _, i := range apply {
			errs[i] = err
		}
		g.removeIfUnusedLocked()
		return nil, errs
	}
	if len(apply) > 0 {
		if g.mu.pendingTxn == nil {
			g.mu.pendingTxn = make(map[int64]map[TopicPartition]pendingOffset)
		}
		pend := g.mu.pendingTxn[req.ProducerID]
		if pend == nil {
			pend = make(map[TopicPartition]pendingOffset)
			g.mu.pendingTxn[req.ProducerID] = pend
		}
		for _, i := range apply {
			pend[req.Offsets[i].TopicPartition] = pendingOffset{CommittedOffset: committed[i]}
		}
	}
	return nil, errs
}

// validateTxnCommitLocked checks a KIP-447 commit's generation and member
// (Kafka's validateOffsetCommit with isTransactional): the member must be
// in the group (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) with the group's
// generation (ILLEGAL_GENERATION); a consumer-protocol member's generation
// is its member epoch.
func (g *Group) validateTxnCommitLocked(req TxnCommitRequest) error {
	if cg := g.mu.consumer; cg != nil {
		m := cg.members[req.MemberID]
		if m == nil {
			return fmt.Errorf("%w: member %q is not in consumer group %s", kerr.UnknownMemberID, req.MemberID, g.id)
		}
		if req.Generation != m.epoch {
			return fmt.Errorf("%w: member %s committed with generation %d, its epoch is %d", kerr.IllegalGeneration, m.id, req.Generation, m.epoch)
		}
		return nil
	}
	if _, err := g.validateMemberLocked(req.MemberID, req.InstanceID); err != nil {
		return err
	}
	if req.Generation != g.mu.generation {
		return fmt.Errorf("%w: generation %d, the group is at %d", kerr.IllegalGeneration, req.Generation, g.mu.generation)
	}
	return nil
}

// appendTxnRecords appends records to partition p as one transactional
// batch of the producer, as Kafka's coordinator writes a TxnOffsetCommit.
func (c *Coordinator) appendTxnRecords(p int32, producerID int64, producerEpoch int16, guard storage.VerificationGuard, recs []kv) error {
	if len(recs) == 0 {
		return nil
	}
	batch, err := buildTxnBatch(recs, c.now().UnixMilli(), producerID, producerEpoch, c.cfg.CommitCodec)
	if err != nil {
		return err
	}
	if va, ok := c.log.(VerifiedAppender); ok && guard != storage.NoVerification {
		return mapAppendError(va.AppendVerified(p, batch, guard))
	}
	return c.appendBatch(p, batch)
}

// buildTxnBatch is buildBatch for a producer's transaction: its id and
// epoch, the transactional bit, and sequence 0, which Kafka's coordinator
// writes and the log does not check for coordinator appends.
func buildTxnBatch(recs []kv, ts int64, producerID int64, producerEpoch int16, codec record.Codec) ([]byte, error) {
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{OffsetDelta: int32(i), Key: r.key, Value: r.value}
	}
	h := record.Header{
		PartitionLeaderEpoch: -1,
		Attributes:           txnAttribute,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           producerID,
		ProducerEpoch:        producerEpoch,
		BaseSequence:         0,
	}
	return record.BuildBatch(h, rs, codec)
}

// txnAttribute is the batch attribute bit of transactional batches.
const txnAttribute = 0x10

// CompleteTransaction applies a transaction marker written to
// __consumer_offsets partition p: the producer's pending offsets in the
// groups of p become committed (commit) or are dropped (abort).
//
// While p is still loading the marker may lie past what the load reads, so
// the answer is COORDINATOR_LOAD_IN_PROGRESS and the transaction
// coordinator writes the marker again; the second marker completes nothing
// in the log and finds the loaded groups here.
func (c *Coordinator) CompleteTransaction(p int32, producerID int64, commit bool) error {
	c.mu.Lock()
	if s := c.mu.shards[p]; s == nil || !s.loaded {
		c.mu.Unlock()
		return fmt.Errorf("%w: __consumer_offsets-%d is not loaded here", kerr.CoordinatorLoadInProgress, p)
	}
	var groups []*Group
	for _, g := range c.mu.groups {
		if g.partition == p {
			groups = append(groups, g)
		}
	}
	c.mu.Unlock()
	for _, g := range groups {
		g.mu.Lock()
		g.completeTxnLocked(producerID, commit)
		g.removeIfUnusedLocked()
		g.mu.Unlock()
	}
	return nil
}

// completeTxnLocked moves or drops one producer's pending offsets.
func (g *Group) completeTxnLocked(producerID int64, commit bool) {
	pend, ok := g.mu.pendingTxn[producerID]
	if !ok {
		return
	}
	delete(g.mu.pendingTxn, producerID)
	if !commit {
		return
	}
	if g.mu.offsets == nil {
		g.mu.offsets = make(map[TopicPartition]CommittedOffset)
	}
	for tp, o := range pend {
		if !o.superseded {
			g.mu.offsets[tp] = o.CommittedOffset
		}
	}
}

// hasPendingTxnOffsetLocked reports whether tp has an offset pending in
// an open transaction: OffsetFetch with require_stable answers
// UNSTABLE_OFFSET_COMMIT for it (KIP-447).
func (g *Group) hasPendingTxnOffsetLocked(tp TopicPartition) bool {
	for _, pend := range g.mu.pendingTxn {
		if _, ok := pend[tp]; ok {
			return true
		}
	}
	return false
}

// restorePendingTxnOffsets gives the loaded groups the offsets of the
// transactions still open at the end of the replay, creating a group that
// has nothing else yet (its first commit is transactional).
func restorePendingTxnOffsets(groups []*Group, txn *txnReplay, newGroup func(string) *Group) []*Group {
	byID := make(map[string]*Group, len(groups))
	for _, g := range groups {
		byID[g.id] = g
	}
	for pid, recs := range txn.pending {
		for _, r := range recs {
			if !r.isOffset {
				continue
			}
			g := byID[r.group]
			if g == nil {
				g = newGroup(r.group)
				byID[r.group] = g
				groups = append(groups, g)
			}
			if g.mu.pendingTxn == nil {
				g.mu.pendingTxn = make(map[int64]map[TopicPartition]pendingOffset)
			}
			pend := g.mu.pendingTxn[pid]
			if pend == nil {
				pend = make(map[TopicPartition]pendingOffset)
				g.mu.pendingTxn[pid] = pend
			}
			if r.tombstone {
				delete(pend, r.tp)
			} else {
				pend[r.tp] = pendingOffset{CommittedOffset: r.offset, superseded: r.superseded}
			}
		}
	}
	return groups
}
