package partition

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metrics"
	"github.com/vltava/vltava/internal/storage"
)

// This file is the leader's side of replication, after Kafka's Partition:
// the followers' fetch positions, the high watermark they imply, and the
// ISR changes (AlterPartition) they call for. The follower side is the
// fetcher in internal/replication, which uses AppendAsFollower,
// TruncateTo and UpdateFollowerHighWatermark below.

// env is what every partition of a Manager shares: this node's id, the
// clock, replica.lag.time.max.ms and the controller client.
type env struct {
	nodeID     int32
	now        func() time.Time
	lagMax     time.Duration
	logger     *slog.Logger
	controller atomic.Pointer[controllerRef]
}

// controllerRef boxes the interface for atomic.Pointer.
type controllerRef struct{ c ControllerClient }

func (e *env) controllerClient() ControllerClient {
	if r := e.controller.Load(); r != nil {
		return r.c
	}
	return nil
}

// followerState is what the leader knows of one follower replica (Kafka's
// Replica / ReplicaState), learned from its Fetch requests.
type followerState struct {
	// leo is the follower's log end offset: the offset it last fetched
	// from. -1 until its first fetch since this node became leader.
	leo int64
	// lastCaughtUp is the last time the follower had fetched up to the
	// leader's log end offset (Kafka's lastCaughtUpTimeMs, KIP-16 style
	// lag in time rather than messages).
	lastCaughtUp time.Time
	// lastFetchTime and lastFetchLeaderLEO are the time of the previous
	// fetch and the leader's log end offset at that time: a follower that
	// reaches lastFetchLeaderLEO was caught up as of lastFetchTime.
	lastFetchTime      time.Time
	lastFetchLeaderLEO int64
}

// caughtUp reports whether the follower is in sync with a leader whose log
// ends at leaderLEO: at the end, or caught up within replica.lag.time.max.ms.
func (f *followerState) caughtUp(leaderLEO int64, now time.Time, lagMax time.Duration) bool {
	return f.leo >= 0 && (f.leo >= leaderLEO || now.Sub(f.lastCaughtUp) <= lagMax)
}

// pendingISR is an AlterPartition in flight (Kafka's PendingExpandIsr /
// PendingShrinkIsr). While it is pending, no other ISR change is proposed,
// and the high watermark is computed over maximal: the union of the
// committed and proposed ISRs, so an expansion never lets the high
// watermark pass the joining replica before the controller has spoken.
type pendingISR struct {
	proposed       []int32
	maximal        []int32
	partitionEpoch int32 // the epoch the change was proposed at
	leaderEpoch    int32
	expand         bool // an expansion (else a shrink), counted when applied
}

// leaderState is the leader's replication view; it is guarded by
// Partition.mu and empty while this node follows.
type leaderState struct {
	isLeader  bool
	epoch     int32
	followers map[int32]*followerState
	pending   *pendingISR
}

// IsLeader reports whether this node leads the partition.
func (p *Partition) IsLeader() bool { return p.settings.Load().leader == p.env.nodeID }

// Replicas is the partition's replica set from the latest image.
func (p *Partition) Replicas() []int32 { return slices.Clone(p.settings.Load().replicas) }

// ISR is the committed in-sync replica set from the latest image.
func (p *Partition) ISR() []int32 { return slices.Clone(p.settings.Load().isr) }

// applySettings installs s and performs the role transition it implies
// (Kafka's makeLeader / makeFollower). It is called by Manager.Apply, one
// call at a time.
//
// It holds the role lock exclusively (see Partition.role), and does no I/O
// under it: AssignLeaderEpoch changes the epoch cache in memory only.
func (p *Partition) applySettings(s *settings) {
	p.role.Lock()
	p.applySettingsLocked(s)
	p.role.Unlock()
	// Parked produces and fetches recheck: the role, the ISR or the
	// high watermark may have changed.
	p.notify()
}

func (p *Partition) applySettingsLocked(s *settings) {
	prev := p.settings.Load()
	lead := s.leader == p.env.nodeID
	newEpoch := prev == nil || prev.leaderEpoch != s.leaderEpoch || prev.leader != s.leader
	if lead && newEpoch {
		// The new epoch starts at the log end offset; followers learn
		// of it through OffsetForLeaderEpoch / diverging epochs.
		if err := p.log.AssignLeaderEpoch(s.leaderEpoch); err != nil {
			p.env.logger.Error("recording leader epoch", "topic", p.Topic, "partition", p.Index, "epoch", s.leaderEpoch, "err", err)
		}
	}
	p.settings.Store(s)

	now := p.env.now()
	p.mu.Lock()
	ls := &p.mu.leader
	switch {
	case !lead:
		*ls = leaderState{}
	case !ls.isLeader || ls.epoch != s.leaderEpoch:
		// A new leadership: followers start unknown, those in the ISR
		// given a full lag period to show up (Kafka resets lastCaughtUp
		// to now for ISR members on makeLeader).
		*ls = leaderState{isLeader: true, epoch: s.leaderEpoch, followers: make(map[int32]*followerState)}
		for _, r := range s.replicas {
			if r == p.env.nodeID {
				continue
			}
			f := &followerState{leo: -1, lastFetchLeaderLEO: -1}
			if slices.Contains(s.isr, r) {
				f.lastCaughtUp = now
			}
			ls.followers[r] = f
		}
	default:
		// Same leadership; the ISR or replicas may have changed.
		if pd := ls.pending; pd != nil && (s.partitionEpoch > pd.partitionEpoch || s.leaderEpoch != pd.leaderEpoch) {
			// IsrShrinksPerSec and IsrExpandsPerSec count a change of
			// this leader's once it is in force (Kafka marks them when
			// the controller commits it), not when proposed: the image
			// carries the ISR proposed, in the same leader epoch.
			if s.leaderEpoch == pd.leaderEpoch && sameMembers(s.isr, pd.proposed) {
				if pd.expand {
					metrics.IsrExpanded()
				} else {
					metrics.IsrShrunk()
				}
			}
			ls.pending = nil
		}
		for r := range ls.followers {
			if !slices.Contains(s.replicas, r) {
				delete(ls.followers, r)
			}
		}
		for _, r := range s.replicas {
			if _, ok := ls.followers[r]; !ok && r != p.env.nodeID {
				ls.followers[r] = &followerState{leo: -1, lastFetchLeaderLEO: -1}
			}
		}
	}
	if lead {
		p.maybeAdvanceHighWatermarkLocked(now)
	}
	p.mu.Unlock()
}

// maximalISRLocked is the ISR the high watermark and acks=all answer to:
// the committed one, or the union with a pending proposal.
func (p *Partition) maximalISRLocked(s *settings) []int32 {
	if pd := p.mu.leader.pending; pd != nil {
		return pd.maximal
	}
	return s.isr
}

// maybeAdvanceHighWatermarkLocked moves the high watermark to the smallest
// log end offset among the leader, the maximal ISR and any follower caught
// up within replica.lag.time.max.ms (Kafka includes those so the high
// watermark does not run ahead of a replica about to rejoin). It never
// moves backwards: a smaller minimum (a follower that fell behind, a
// joining replica) leaves it where it is, as Kafka's maybeIncrementLeaderHW.
// It reports whether it moved.
func (p *Partition) maybeAdvanceHighWatermarkLocked(now time.Time) bool {
	s := p.settings.Load()
	leo := p.log.LogEndOffset()
	hw := leo
	isr := p.maximalISRLocked(s)
	for id, f := range p.mu.leader.followers {
		if slices.Contains(isr, id) || f.caughtUp(leo, now, p.env.lagMax) {
			hw = min(hw, f.leo)
		}
	}
	if !p.log.AdvanceHighWatermark(hw) {
		return false
	}
	p.assertHighWatermarkLocked(isr, hw)
	return true
}

// assertHighWatermarkLocked checks that a high watermark the leader just
// moved to hw passes no member of the ISR it answers to: each has fetched
// up to hw. A violation would acknowledge acks=all records a new leader
// from that ISR might not have.
func (p *Partition) assertHighWatermarkLocked(isr []int32, hw int64) {
	for _, id := range isr {
		if id == p.env.nodeID {
			continue
		}
		// A member with no follower state is not a replica (the image's
		// business, not this computation's) and bounds nothing here.
		if f := p.mu.leader.followers[id]; f != nil && f.leo < hw {
			panic(fmt.Sprintf("partition %s-%d: high watermark %d passes ISR member %d at %d", p.Topic, p.Index, hw, id, f.leo))
		}
	}
}

// advanceHighWatermark recomputes the high watermark after an append on the
// leader and wakes parked fetches and produces: replica fetches wait for
// the log end offset to move, consumers and acks=all for the high
// watermark.
func (p *Partition) advanceHighWatermark() {
	p.mu.Lock()
	if p.mu.leader.isLeader {
		p.maybeAdvanceHighWatermarkLocked(p.env.now())
	}
	p.mu.Unlock()
	p.notify()
}

// ErrNotReplica is returned when a fetch names a replica id that is not
// in the partition's replica set (Kafka answers NOT_LEADER_OR_FOLLOWER).
var ErrNotReplica = fmt.Errorf("%w: fetch from a broker that is not a replica of the partition", kerr.NotLeaderForPartition)

// UpdateFollowerFetch records a follower's fetch at fetchOffset (its log end
// offset), as Kafka's updateFollowerFetchState: it updates the follower's
// caught-up time, may advance the high watermark and may propose adding the
// follower to the ISR. It fails if this node does not lead the partition or
// replicaID is not one of its replicas.
//
// The epoch cache is read before p.mu is taken: p.mu (which parked fetches
// and appends also need) is never held waiting on the epoch cache's lock.
func (p *Partition) UpdateFollowerFetch(replicaID int32, fetchOffset int64) error {
	now := p.env.now()
	s := p.settings.Load()
	epochStart := p.log.EpochStartOffset(s.leaderEpoch)
	p.mu.Lock()
	ls := &p.mu.leader
	if !ls.isLeader {
		p.mu.Unlock()
		return fmt.Errorf("%w: broker %d does not lead %s-%d", kerr.NotLeaderForPartition, p.env.nodeID, p.Topic, p.Index)
	}
	f := ls.followers[replicaID]
	if f == nil {
		p.mu.Unlock()
		return fmt.Errorf("%w: broker %d is not a replica of %s-%d (replicas %v)", ErrNotReplica, replicaID, p.Topic, p.Index, s.replicas)
	}
	leo := p.log.LogEndOffset()
	switch {
	case fetchOffset >= leo:
		f.lastCaughtUp = now
	case fetchOffset >= f.lastFetchLeaderLEO && f.lastFetchLeaderLEO >= 0:
		if f.lastFetchTime.After(f.lastCaughtUp) {
			f.lastCaughtUp = f.lastFetchTime
		}
	}
	f.leo, f.lastFetchLeaderLEO, f.lastFetchTime = fetchOffset, leo, now
	moved := p.maybeAdvanceHighWatermarkLocked(now)
	change := p.maybeExpandISRLocked(s, replicaID, f, epochStart)
	p.mu.Unlock()
	if moved {
		p.notify()
	}
	if change != nil {
		p.sendISRChange(*change)
	}
	return nil
}

// maybeExpandISRLocked proposes adding a follower outside the ISR once it
// has reached both the high watermark and the start of the current leader
// epoch (Kafka's isFollowerInSync), unless another change is pending.
// epochStart is where the leader epoch of s starts in the log (-1 if
// unknown).
func (p *Partition) maybeExpandISRLocked(s *settings, id int32, f *followerState, epochStart int64) *ISRChange {
	ls := &p.mu.leader
	if ls.pending != nil || slices.Contains(s.isr, id) {
		return nil
	}
	if f.leo < p.log.HighWatermark() || epochStart < 0 || f.leo < epochStart {
		return nil
	}
	proposed := append(slices.Clone(s.isr), id)
	slices.Sort(proposed)
	return p.proposeLocked(s, proposed, proposed)
}

// maybeShrinkISR proposes dropping ISR members that have not caught up for
// replica.lag.time.max.ms (Kafka's maybeShrinkIsr), unless a change is
// pending. The Manager calls it periodically.
func (p *Partition) maybeShrinkISR() {
	now := p.env.now()
	s := p.settings.Load()
	p.mu.Lock()
	ls := &p.mu.leader
	if !ls.isLeader || ls.pending != nil || ls.epoch != s.leaderEpoch {
		p.mu.Unlock()
		return
	}
	leo := p.log.LogEndOffset()
	var keep, out []int32
	for _, id := range s.isr {
		f := ls.followers[id]
		if id == p.env.nodeID || (f != nil && (f.leo >= leo || now.Sub(f.lastCaughtUp) <= p.env.lagMax)) {
			keep = append(keep, id)
		} else {
			out = append(out, id)
		}
	}
	var change *ISRChange
	if len(out) > 0 {
		// While a shrink is pending the committed (larger) ISR still
		// bounds the high watermark, as in Kafka.
		change = p.proposeLocked(s, keep, s.isr)
		p.env.logger.Info("shrinking ISR", "topic", p.Topic, "partition", p.Index, "isr", s.isr, "out_of_sync", out, "proposed", keep)
	}
	p.mu.Unlock()
	if change != nil {
		p.sendISRChange(*change)
	}
}

// proposeLocked marks an ISR change pending and returns it, or nil when
// there is no controller to send it to.
func (p *Partition) proposeLocked(s *settings, proposed, maximal []int32) *ISRChange {
	if p.env.controllerClient() == nil {
		return nil
	}
	p.mu.leader.pending = &pendingISR{proposed: proposed, maximal: maximal, partitionEpoch: s.partitionEpoch, leaderEpoch: s.leaderEpoch,
		expand: len(proposed) > len(s.isr)}
	return &ISRChange{TopicID: p.TopicID, Partition: p.Index, LeaderEpoch: s.leaderEpoch, PartitionEpoch: s.partitionEpoch, NewISR: slices.Clone(proposed)}
}

// sendISRChange sends c to the controller without blocking the caller (a
// fetch handler or the ISR check). On failure the pending change is
// dropped, so a later fetch or check proposes again; on success it stays
// pending until the image carries the new partition epoch.
func (p *Partition) sendISRChange(c ISRChange) {
	ctrl := p.env.controllerClient()
	if ctrl == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), max(p.env.lagMax, 5*time.Second))
		defer cancel()
		err := ctrl.AlterPartition(ctx, c)
		if err == nil {
			return
		}
		p.env.logger.Warn("AlterPartition failed", "topic", p.Topic, "partition", p.Index, "proposed_isr", c.NewISR, "err", err)
		p.mu.Lock()
		if pd := p.mu.leader.pending; pd != nil && pd.partitionEpoch == c.PartitionEpoch && pd.leaderEpoch == c.LeaderEpoch && slices.Equal(pd.proposed, c.NewISR) {
			p.mu.leader.pending = nil
		}
		p.mu.Unlock()
	}()
}

// DivergingEpoch checks a follower's fetch position against the leader's
// epoch history (KIP-320, Kafka's validateFetchOffsetAndMaybeGetDivergingEpoch):
// if the follower's last fetched epoch ends earlier in the leader's log than
// fetchOffset, or is unknown to it, the follower must truncate to the
// returned (epoch, endOffset) before fetching on. lastFetchedEpoch < 0 means
// the follower did not say, and nothing is checked.
func (p *Partition) DivergingEpoch(lastFetchedEpoch int32, fetchOffset int64) (epoch int32, endOffset int64, diverged bool) {
	if lastFetchedEpoch < 0 {
		return -1, -1, false
	}
	epoch, endOffset = p.log.EndOffsetForEpoch(lastFetchedEpoch)
	if epoch < lastFetchedEpoch || endOffset < fetchOffset {
		return epoch, endOffset, true
	}
	return -1, -1, false
}

// ReadReplica reads for a follower: up to the log end offset rather than
// the high watermark, without copying (see ReadRegion).
func (p *Partition) ReadReplica(offset int64, maxBytes int, minOneBatch bool) (storage.ReadResult, error) {
	return p.log.ReadRegion(offset, maxBytes, p.log.LogEndOffset(), minOneBatch)
}

// sameMembers reports whether a and b hold the same replica ids.
func sameMembers(a, b []int32) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(id int32) bool { return !slices.Contains(b, id) })
}

// AppendAsFollower appends batches fetched from the leader as they are. It
// refuses while this node leads the partition; the check and the write are
// under the role lock, so a leadership gained meanwhile waits for the write
// and then sees it (as Kafka's appendRecordsToFollowerOrFutureReplica).
func (p *Partition) AppendAsFollower(records []byte) (storage.AppendInfo, error) {
	p.role.RLock()
	if p.IsLeader() {
		p.role.RUnlock()
		return storage.AppendInfo{BaseOffset: -1, LastOffset: -1}, fmt.Errorf("%w: %s-%d is led here; not appending fetched data", kerr.NotLeaderForPartition, p.Topic, p.Index)
	}
	info, needsFlush, err := p.log.AppendAsFollowerUnflushed(records)
	p.role.RUnlock()
	if err == nil && metrics.Enabled() {
		metrics.AllTopics.ReplicationBytesIn.Add(uint64(len(records))) // ReplicationBytesInPerSec
	}
	if err == nil && needsFlush {
		if ferr := p.log.Flush(); ferr != nil {
			err = fmt.Errorf("%w: flushing %s-%d: %v", kerr.KafkaStorageError, p.Topic, p.Index, ferr)
		}
	}
	return info, err
}

// errTruncateLeader refuses a truncation of a log led here: only a
// follower truncates to its leader's history.
func (p *Partition) errTruncateLeader() error {
	return fmt.Errorf("%w: %s-%d is led here; not truncating", kerr.NotLeaderForPartition, p.Topic, p.Index)
}

// TruncateTo cuts the follower's log at offset (diverging epoch) and wakes
// anything parked on it. Like a follower append it holds the role lock
// shared (Kafka's truncateTo takes leaderIsrUpdateLock for reading), so a
// leadership cannot begin in the middle of it; the truncation's own I/O
// (cutting the segment, the epoch checkpoint) is bounded.
func (p *Partition) TruncateTo(offset int64) error {
	p.role.RLock()
	err := p.errTruncateLeader()
	if !p.IsLeader() {
		err = p.log.Truncate(offset)
	}
	p.role.RUnlock()
	if err != nil {
		return err
	}
	p.notify()
	return nil
}

// TruncateFullyAndStartAt empties the follower's log and restarts it at
// offset (the leader's log start offset moved past the follower), under
// the role lock as TruncateTo.
func (p *Partition) TruncateFullyAndStartAt(offset int64) error {
	p.role.RLock()
	err := p.errTruncateLeader()
	if !p.IsLeader() {
		err = p.log.TruncateFullyAndStartAt(offset)
	}
	p.role.RUnlock()
	if err != nil {
		return err
	}
	p.notify()
	return nil
}

// UpdateFollowerHighWatermark sets a follower's high watermark from the
// leader's: min(leader's high watermark, own log end offset), as Kafka's
// fetcher does after each append.
//
// It holds the role lock shared so a leadership cannot begin between the
// check and the store: a leader's high watermark never moves back, and a
// stale follower value could move it back.
func (p *Partition) UpdateFollowerHighWatermark(leaderHW int64) {
	p.role.RLock()
	if p.IsLeader() {
		p.role.RUnlock()
		return
	}
	hw := min(leaderHW, p.log.LogEndOffset())
	changed := hw != p.log.HighWatermark()
	if changed {
		p.log.SetHighWatermark(hw)
	}
	p.role.RUnlock()
	if changed {
		p.notify()
	}
}

// AwaitReplication is the delayed produce of acks=all (Kafka's
// DelayedProduce): it waits until the high watermark reaches
// requiredOffset (the appended batch's last offset + 1), parked on the
// partition's waiters and woken by high-watermark, ISR and role changes.
// It returns nil when the batch is committed with the ISR at least
// min.insync.replicas, NOT_ENOUGH_REPLICAS_AFTER_APPEND when it is
// committed but the ISR shrank below, NOT_LEADER_OR_FOLLOWER when this node
// lost the leadership, and REQUEST_TIMED_OUT when ctx ends first.
func (p *Partition) AwaitReplication(ctx context.Context, requiredOffset int64) error {
	return p.awaitHighWatermark(ctx, requiredOffset, true)
}

// AwaitHighWatermark waits, as leader, until the high watermark reaches
// offset, whatever the size of the ISR: NOT_LEADER_OR_FOLLOWER when this
// node lost the leadership, REQUEST_TIMED_OUT when ctx ends first.
func (p *Partition) AwaitHighWatermark(ctx context.Context, offset int64) error {
	return p.awaitHighWatermark(ctx, offset, false)
}

func (p *Partition) awaitHighWatermark(ctx context.Context, requiredOffset int64, checkMinISR bool) error {
	var w *Waiter
	defer func() {
		if w != nil {
			p.Unwatch(w)
		}
	}()
	for {
		s := p.settings.Load()
		p.mu.Lock()
		leading := p.mu.leader.isLeader && s.leader == p.env.nodeID
		isrSize := len(p.maximalISRLocked(s))
		p.mu.Unlock()
		switch {
		case p.removed.Load():
			return fmt.Errorf("%w: %s-%d was removed from this broker while waiting for replication", kerr.NotLeaderForPartition, p.Topic, p.Index)
		case !leading:
			return fmt.Errorf("%w: leadership of %s-%d moved while waiting for replication", kerr.NotLeaderForPartition, p.Topic, p.Index)
		case p.log.HighWatermark() >= requiredOffset:
			if checkMinISR && int32(isrSize) < s.topic.MinInsyncReplicas {
				return fmt.Errorf("%w: the ISR of %s-%d shrank to %d, below min.insync.replicas=%d, after the append",
					kerr.NotEnoughReplicasAfterAppend, p.Topic, p.Index, isrSize, s.topic.MinInsyncReplicas)
			}
			return nil
		}
		if w == nil {
			// Register, then recheck: a change between the check
			// above and Watch is seen by that recheck.
			w = NewWaiter()
			p.Watch(w)
			continue
		}
		select {
		case <-w.C:
		case <-ctx.Done():
			return fmt.Errorf("%w: %s-%d high watermark %d did not reach %d in time", kerr.RequestTimedOut, p.Topic, p.Index, p.log.HighWatermark(), requiredOffset)
		}
	}
}
