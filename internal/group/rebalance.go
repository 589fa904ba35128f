package group

// The classic rebalance protocol: JoinGroup, SyncGroup, Heartbeat and
// LeaveGroup, following Kafka's GroupCoordinator / ClassicGroup.
//
//	Empty --join--> PreparingRebalance --all joined or timeout--> CompletingRebalance
//	CompletingRebalance --leader's SyncGroup stored--> Stable
//	Stable / CompletingRebalance --join with new metadata, leave, expiry--> PreparingRebalance
//	PreparingRebalance --nobody left--> Empty
//	Empty --offsets expired, deleted--> Dead

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// JoinRequest is one JoinGroup.
type JoinRequest struct {
	GroupID    string
	MemberID   string  // "" on a member's first join
	InstanceID *string // group.instance.id (v5+, KIP-345)
	ClientID   string
	ClientHost string
	// SessionTimeout must lie within group.min/max.session.timeout.ms.
	SessionTimeout time.Duration
	// RebalanceTimeout bounds the join phase (v1+; the session timeout
	// before).
	RebalanceTimeout time.Duration
	ProtocolType     string
	Protocols        []Protocol
	// RequireKnownMemberID is set from v4 (KIP-394): a new dynamic member
	// gets MEMBER_ID_REQUIRED and its id, and must join again with it.
	RequireKnownMemberID bool
	Reason               string
}

// JoinMember is a member as the leader sees it in its JoinGroup response.
type JoinMember struct {
	MemberID   string
	InstanceID *string
	Metadata   []byte
}

// JoinResult is the JoinGroup answer. Err wraps a kerr code.
type JoinResult struct {
	Err          error
	MemberID     string
	Generation   int32
	ProtocolType string
	ProtocolName string
	LeaderID     string
	// SkipAssignment tells a static leader that rejoined a stable group
	// not to assign again (KIP-814, v9+).
	SkipAssignment bool
	Members        []JoinMember // the leader's only
}

// SyncRequest is one SyncGroup.
type SyncRequest struct {
	GroupID      string
	MemberID     string
	InstanceID   *string
	Generation   int32
	ProtocolType *string // v5+: checked against the group's when set
	ProtocolName *string // v5+
	// Assignments is the leader's assignment per member id.
	Assignments map[string][]byte
}

// SyncResult is the SyncGroup answer.
type SyncResult struct {
	Err          error
	ProtocolType string
	ProtocolName string
	Assignment   []byte
}

// LeaveMember is one member leaving (LeaveGroup v3+ batches them).
type LeaveMember struct {
	MemberID   string
	InstanceID *string
}

func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", clientID, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// JoinGroup adds or refreshes a member and waits, parked on a channel, for
// the join phase to end. ctx ends the wait (the connection closed); the
// member stays until its session expires.
func (c *Coordinator) JoinGroup(ctx context.Context, req JoinRequest) JoinResult {
	fail := func(err error) JoinResult { return JoinResult{Err: err, MemberID: req.MemberID, Generation: -1} }
	if req.GroupID == "" {
		return fail(kerr.InvalidGroupID)
	}
	if err := c.CheckOwner(req.GroupID); err != nil {
		return fail(err)
	}
	if req.SessionTimeout < c.cfg.MinSessionTimeout || req.SessionTimeout > c.cfg.MaxSessionTimeout {
		return fail(fmt.Errorf("%w: session timeout %v is outside [%v, %v]", kerr.InvalidSessionTimeout,
			req.SessionTimeout, c.cfg.MinSessionTimeout, c.cfg.MaxSessionTimeout))
	}
	g, err := c.lockGroup(req.GroupID, req.MemberID == "")
	if err != nil {
		return fail(err)
	}
	if g == nil {
		return fail(kerr.UnknownMemberID)
	}
	ch, res := g.joinLocked(req)
	g.removeIfUnusedLocked()
	g.mu.Unlock()
	if ch == nil {
		return res
	}
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return fail(ctx.Err())
	}
}

// removeIfUnusedLocked drops a group that a failed first join created and
// that holds nothing.
func (g *Group) removeIfUnusedLocked() {
	if cg := g.mu.consumer; cg != nil {
		// A consumer group exists from its first successful join
		// (epoch 1) on.
		if cg.epoch == 0 && len(cg.members) == 0 && len(g.mu.offsets) == 0 && len(g.mu.pendingTxn) == 0 {
			g.mu.state = StateDead
			g.c.removeGroupLocked(g)
		}
		return
	}
	if g.mu.state == StateEmpty && g.mu.generation == 0 && len(g.mu.members) == 0 &&
		len(g.mu.pending) == 0 && len(g.mu.offsets) == 0 && len(g.mu.pendingTxn) == 0 {
		g.mu.state = StateDead
		g.c.removeGroupLocked(g)
	}
}

// acceptJoiningMemberLocked is Kafka's group.max.size check.
func (g *Group) acceptJoiningMemberLocked(memberID string) bool {
	max := g.c.cfg.MaxSize
	if max <= 0 {
		return true
	}
	m, has := g.mu.members[memberID]
	switch g.mu.state {
	case StateEmpty, StateDead:
		return true
	case StatePreparingRebalance:
		return (has && m.joinCh != nil) || g.numAwaitingJoinLocked() < max
	default:
		return has || len(g.mu.members) < max
	}
}

func (g *Group) numAwaitingJoinLocked() int {
	n := 0
	for _, m := range g.mu.members {
		if m.joinCh != nil {
			n++
		}
	}
	return n
}

// joinLocked returns either a channel to wait on or an immediate result.
func (g *Group) joinLocked(req JoinRequest) (chan JoinResult, JoinResult) {
	fail := func(err error) (chan JoinResult, JoinResult) {
		return nil, JoinResult{Err: err, MemberID: req.MemberID, Generation: -1}
	}
	if cg := g.mu.consumer; cg != nil {
		// A classic member may take over an empty consumer group,
		// which Kafka converts; it joins a consumer group in use as
		// a classic member of it (migration.go), whatever
		// group.consumer.migration.policy says: as in Kafka, the
		// policy governs converting the group, not who may join it.
		if len(cg.members) > 0 {
			return nil, g.classicJoinConsumerLocked(req)
		}
		if cg.epoch > 0 {
			if err := g.c.appendRecords(g.partition, consumerGroupTombstones(g.id)); err != nil {
				return fail(err)
			}
		}
		g.mu.consumer = nil
		g.mu.protocolType = ""
	}
	if !g.acceptJoiningMemberLocked(req.MemberID) {
		if m, ok := g.mu.members[req.MemberID]; ok {
			g.removeMemberAndUpdateLocked(m, "group is full")
		}
		return fail(fmt.Errorf("%w: group %s has reached group.max.size %d", kerr.GroupMaxSizeReached, g.id, g.c.cfg.MaxSize))
	}
	if !g.supportsProtocolsLocked(req.ProtocolType, req.Protocols) {
		return fail(kerr.InconsistentGroupProtocol)
	}
	if req.MemberID == "" {
		return g.joinNewMemberLocked(req)
	}
	return g.joinKnownMemberLocked(req)
}

func (g *Group) joinNewMemberLocked(req JoinRequest) (chan JoinResult, JoinResult) {
	id := newMemberID(req.ClientID)
	if req.InstanceID != nil {
		if old, ok := g.mu.static[*req.InstanceID]; ok {
			return g.replaceStaticMemberLocked(req, g.mu.members[old], id)
		}
		return g.addMemberAndRebalanceLocked(req, id), JoinResult{}
	}
	if req.RequireKnownMemberID {
		// KIP-394: hand out the id and wait for the member to come
		// back with it, so a client that times out and retries does
		// not leave a ghost member behind.
		g.mu.pending[id] = time.AfterFunc(req.SessionTimeout, func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if _, ok := g.mu.pending[id]; !ok || g.mu.state == StateDead {
				return
			}
			delete(g.mu.pending, id)
			if g.mu.state == StatePreparingRebalance {
				g.tryCompleteJoinLocked()
			}
			g.removeIfUnusedLocked()
		})
		return nil, JoinResult{Err: kerr.MemberIDRequired, MemberID: id, Generation: -1}
	}
	return g.addMemberAndRebalanceLocked(req, id), JoinResult{}
}

func (g *Group) joinKnownMemberLocked(req JoinRequest) (chan JoinResult, JoinResult) {
	fail := func(err error) (chan JoinResult, JoinResult) {
		return nil, JoinResult{Err: err, MemberID: req.MemberID, Generation: -1}
	}
	if t, ok := g.mu.pending[req.MemberID]; ok {
		t.Stop()
		delete(g.mu.pending, req.MemberID)
		return g.addMemberAndRebalanceLocked(req, req.MemberID), JoinResult{}
	}
	m, err := g.validateMemberLocked(req.MemberID, req.InstanceID)
	if err != nil {
		return fail(err)
	}
	switch g.mu.state {
	case StatePreparingRebalance:
		return g.updateMemberAndRebalanceLocked(m, req), JoinResult{}
	case StateCompletingRebalance:
		if sameProtocols(m.protocols, req.Protocols) {
			// The member lost its JoinGroup response: answer again.
			g.scheduleSessionLocked(m)
			return nil, g.joinResultLocked(m, g.mu.leader == m.id)
		}
		return g.updateMemberAndRebalanceLocked(m, req), JoinResult{}
	case StateStable:
		if g.mu.leader == m.id || !sameProtocols(m.protocols, req.Protocols) {
			// The leader rejoining, or new metadata (a changed
			// subscription): rebalance.
			return g.updateMemberAndRebalanceLocked(m, req), JoinResult{}
		}
		g.scheduleSessionLocked(m)
		return nil, g.joinResultLocked(m, false)
	default:
		return fail(kerr.UnknownMemberID)
	}
}

// joinResultLocked is the current generation as m sees it.
func (g *Group) joinResultLocked(m *member, withMembers bool) JoinResult {
	r := JoinResult{
		MemberID:     m.id,
		Generation:   g.mu.generation,
		ProtocolType: g.mu.protocolType,
		ProtocolName: g.mu.protocolName,
		LeaderID:     g.mu.leader,
	}
	if withMembers {
		for _, id := range g.mu.order {
			o := g.mu.members[id]
			r.Members = append(r.Members, JoinMember{MemberID: o.id, InstanceID: o.instanceID, Metadata: o.metadataFor(g.mu.protocolName)})
		}
	}
	return r
}

func (g *Group) addMemberAndRebalanceLocked(req JoinRequest, id string) chan JoinResult {
	m := &member{
		id:               id,
		instanceID:       req.InstanceID,
		clientID:         req.ClientID,
		clientHost:       req.ClientHost,
		sessionTimeout:   req.SessionTimeout,
		rebalanceTimeout: req.RebalanceTimeout,
		protocolType:     req.ProtocolType,
		protocols:        req.Protocols,
		joinCh:           make(chan JoinResult, 1),
	}
	g.addMemberLocked(m)
	g.scheduleSessionLocked(m)
	g.mu.newMemberAdded = true
	g.maybePrepareRebalanceLocked("member " + id + " joined")
	ch := m.joinCh
	if g.mu.state == StatePreparingRebalance {
		g.tryCompleteJoinLocked()
	}
	return ch
}

func (g *Group) updateMemberAndRebalanceLocked(m *member, req JoinRequest) chan JoinResult {
	m.protocols = req.Protocols
	m.rebalanceTimeout = req.RebalanceTimeout
	m.sessionTimeout = req.SessionTimeout
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	if m.joinCh != nil {
		// A second JoinGroup while the first is still parked (the
		// client gave up on it): only the newest gets the result.
		m.joinCh <- JoinResult{Err: kerr.RebalanceInProgress, MemberID: m.id, Generation: -1}
	}
	m.joinCh = make(chan JoinResult, 1)
	ch := m.joinCh
	g.maybePrepareRebalanceLocked("member " + m.id + " rejoined: " + req.Reason)
	if g.mu.state == StatePreparingRebalance {
		g.tryCompleteJoinLocked()
	}
	return ch
}

// replaceStaticMemberLocked handles a known group.instance.id joining with
// no member id (KIP-345): the instance's old member id is fenced and
// replaced by newID. In a stable group whose selected protocol does not
// change, the member gets the current generation back without a rebalance.
func (g *Group) replaceStaticMemberLocked(req JoinRequest, old *member, newID string) (chan JoinResult, JoinResult) {
	oldID := old.id
	fenced := fmt.Errorf("%w: instance %s rejoined as %s", kerr.FencedInstanceID, *req.InstanceID, newID)
	if old.joinCh != nil {
		old.joinCh <- JoinResult{Err: fenced, MemberID: oldID, Generation: -1}
		old.joinCh = nil
	}
	if old.syncCh != nil {
		old.syncCh <- SyncResult{Err: fenced}
		old.syncCh = nil
	}
	prev := *old
	// Re-key the member under its new id, keeping its place, assignment
	// and leadership.
	delete(g.mu.members, oldID)
	old.id = newID
	old.clientID, old.clientHost = req.ClientID, req.ClientHost
	old.protocols = req.Protocols
	old.sessionTimeout, old.rebalanceTimeout = req.SessionTimeout, req.RebalanceTimeout
	g.mu.members[newID] = old
	for i, id := range g.mu.order {
		if id == oldID {
			g.mu.order[i] = newID
		}
	}
	g.mu.static[*req.InstanceID] = newID
	if g.mu.leader == oldID {
		g.mu.leader = newID
	}
	if g.mu.pendingSync[oldID] {
		delete(g.mu.pendingSync, oldID)
		g.mu.pendingSync[newID] = true
	}
	g.scheduleSessionLocked(old)

	switch g.mu.state {
	case StateStable:
		// As Kafka: only a change of the selected protocol forces a
		// rebalance. The member's metadata bytes may differ (a
		// restarted consumer no longer lists owned partitions or its
		// generation, KIP-792) without the subscription changing.
		if g.selectProtocolLocked() == g.mu.protocolName {
			if err := g.storeLocked(nil); err != nil {
				// Put the old identity back: the member may retry.
				delete(g.mu.members, newID)
				*old = prev
				old.session = nil
				g.mu.members[oldID] = old
				for i, id := range g.mu.order {
					if id == newID {
						g.mu.order[i] = oldID
					}
				}
				g.mu.static[*req.InstanceID] = oldID
				if g.mu.leader == newID {
					g.mu.leader = oldID
				}
				g.scheduleSessionLocked(old)
				return nil, JoinResult{Err: err, MemberID: "", Generation: -1}
			}
			isLeader := g.mu.leader == newID
			r := g.joinResultLocked(old, isLeader)
			r.SkipAssignment = isLeader
			return nil, r
		}
		old.joinCh = make(chan JoinResult, 1)
		g.prepareRebalanceLocked("static member " + *req.InstanceID + " rejoined with new metadata")
		return old.joinCh, JoinResult{}
	case StateCompletingRebalance:
		old.joinCh = make(chan JoinResult, 1)
		g.prepareRebalanceLocked("static member " + *req.InstanceID + " rejoined during the sync phase")
		return old.joinCh, JoinResult{}
	default:
		old.joinCh = make(chan JoinResult, 1)
		ch := old.joinCh
		g.maybePrepareRebalanceLocked("static member " + *req.InstanceID + " joined")
		if g.mu.state == StatePreparingRebalance {
			g.tryCompleteJoinLocked()
		}
		return ch, JoinResult{}
	}
}

func (g *Group) maybePrepareRebalanceLocked(reason string) {
	switch g.mu.state {
	case StateStable, StateCompletingRebalance, StateEmpty:
		g.prepareRebalanceLocked(reason)
	}
}

// prepareRebalanceLocked starts a join phase. Members parked in SyncGroup
// get REBALANCE_IN_PROGRESS. An Empty group's first rebalance waits
// group.initial.rebalance.delay.ms, extended while new members keep
// arriving, up to the rebalance timeout (KIP-134); otherwise the phase ends
// when every member has rejoined or the rebalance timeout passes.
func (g *Group) prepareRebalanceLocked(reason string) {
	if g.mu.state == StateCompletingRebalance {
		g.propagateSyncErrorLocked(kerr.RebalanceInProgress)
	}
	wasEmpty := g.mu.state == StateEmpty
	g.stopPhaseLocked()
	g.mu.pendingSync = make(map[string]bool)
	g.transitionLocked(StatePreparingRebalance)
	g.c.logger.Debug("preparing rebalance", "group", g.id, "generation", g.mu.generation, "reason", reason)
	timeout := g.rebalanceTimeoutLocked()
	if delay := g.c.cfg.InitialRebalanceDelay; wasEmpty && delay > 0 {
		g.mu.newMemberAdded = false
		g.mu.delayRemaining = max(timeout-delay, 0)
		g.scheduleInitialDelayLocked(delay)
		return
	}
	g.schedulePhaseLocked(timeout, g.completeJoinLocked)
}

func (g *Group) scheduleInitialDelayLocked(d time.Duration) {
	g.schedulePhaseLocked(d, func() {
		if g.mu.newMemberAdded && g.mu.delayRemaining > 0 {
			g.mu.newMemberAdded = false
			next := min(g.c.cfg.InitialRebalanceDelay, g.mu.delayRemaining)
			g.mu.delayRemaining -= next
			g.scheduleInitialDelayLocked(next)
			return
		}
		g.completeJoinLocked()
	})
	g.mu.initialDelay = true
}

// propagateSyncErrorLocked answers every parked SyncGroup with err and
// drops the assignments of the generation that failed.
func (g *Group) propagateSyncErrorLocked(err error) {
	for _, m := range g.mu.members {
		m.assignment = nil
		if m.syncCh != nil {
			m.syncCh <- SyncResult{Err: err}
			m.syncCh = nil
		}
	}
}

// tryCompleteJoinLocked ends the join phase once every member has
// rejoined and no KIP-394 member id is outstanding, unless the initial
// delay is running (it always runs to its end).
func (g *Group) tryCompleteJoinLocked() {
	if g.mu.state != StatePreparingRebalance || g.mu.initialDelay || len(g.mu.pending) > 0 {
		return
	}
	if g.numAwaitingJoinLocked() == len(g.mu.members) {
		g.completeJoinLocked()
	}
}

// completeJoinLocked ends the join phase (Kafka's onCompleteJoin):
// dynamic members that did not rejoin are dropped, a new generation starts
// and every joined member gets its JoinGroup response, the leader with the
// members' metadata.
func (g *Group) completeJoinLocked() {
	if g.mu.state != StatePreparingRebalance {
		return
	}
	g.stopPhaseLocked()
	for _, id := range append([]string(nil), g.mu.order...) {
		m := g.mu.members[id]
		if m.joinCh == nil && m.instanceID == nil {
			g.removeMemberLocked(m)
		}
	}
	if lm := g.mu.members[g.mu.leader]; lm == nil || lm.joinCh == nil {
		g.mu.leader = ""
		for _, id := range g.mu.order {
			if g.mu.members[id].joinCh != nil {
				g.mu.leader = id
				break
			}
		}
		if g.mu.leader == "" && len(g.mu.members) > 0 {
			// Only static members that have not rejoined are left:
			// wait another rebalance timeout for them.
			g.mu.leader = g.mu.order[0]
			g.schedulePhaseLocked(g.rebalanceTimeoutLocked(), g.completeJoinLocked)
			return
		}
	}
	g.mu.generation++
	if len(g.mu.members) == 0 {
		g.mu.protocolName = ""
		g.transitionLocked(StateEmpty)
		if err := g.storeLocked(nil); err != nil {
			g.c.logger.Warn("storing empty group", "group", g.id, "err", err)
		}
		return
	}
	g.mu.protocolName = g.selectProtocolLocked()
	g.transitionLocked(StateCompletingRebalance)
	for _, id := range g.mu.order {
		m := g.mu.members[id]
		if m.joinCh == nil {
			continue
		}
		m.joinCh <- g.joinResultLocked(m, id == g.mu.leader)
		m.joinCh = nil
		g.mu.pendingSync[id] = true
		g.scheduleSessionLocked(m)
	}
	// Members that never send SyncGroup are dropped after the rebalance
	// timeout, so the rest are not stuck in CompletingRebalance.
	gen := g.mu.generation
	g.schedulePhaseLocked(g.rebalanceTimeoutLocked(), func() {
		if g.mu.state != StateCompletingRebalance || g.mu.generation != gen || len(g.mu.pendingSync) == 0 {
			return
		}
		for id := range g.mu.pendingSync {
			if m := g.mu.members[id]; m != nil {
				g.removeMemberLocked(m)
			}
		}
		g.prepareRebalanceLocked("members did not sync in time")
		g.tryCompleteJoinLocked()
	})
}

// SyncGroup delivers the leader's assignment: the leader's call stores it
// and completes every member's parked SyncGroup; the others wait for it.
func (c *Coordinator) SyncGroup(ctx context.Context, req SyncRequest) SyncResult {
	if req.GroupID == "" {
		return SyncResult{Err: kerr.InvalidGroupID}
	}
	g, err := c.lockGroup(req.GroupID, false)
	if err != nil {
		return SyncResult{Err: err}
	}
	if g == nil {
		return SyncResult{Err: kerr.UnknownMemberID}
	}
	ch, res := g.syncLocked(req)
	g.mu.Unlock()
	if ch == nil {
		return res
	}
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return SyncResult{Err: ctx.Err()}
	}
}

func (g *Group) syncLocked(req SyncRequest) (chan SyncResult, SyncResult) {
	fail := func(err error) (chan SyncResult, SyncResult) { return nil, SyncResult{Err: err} }
	if g.mu.consumer != nil {
		return nil, g.classicSyncConsumerLocked(req)
	}
	m, err := g.validateMemberLocked(req.MemberID, req.InstanceID)
	if err != nil {
		return fail(err)
	}
	if req.Generation != g.mu.generation {
		return fail(kerr.IllegalGeneration)
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.mu.protocolType) ||
		(req.ProtocolName != nil && *req.ProtocolName != g.mu.protocolName) {
		return fail(kerr.InconsistentGroupProtocol)
	}
	switch g.mu.state {
	case StateEmpty:
		return fail(kerr.UnknownMemberID)
	case StatePreparingRebalance:
		return fail(kerr.RebalanceInProgress)
	case StateStable:
		delete(g.mu.pendingSync, m.id)
		g.scheduleSessionLocked(m)
		return nil, g.syncResultLocked(m)
	}
	// CompletingRebalance.
	delete(g.mu.pendingSync, m.id)
	if m.syncCh != nil {
		m.syncCh <- SyncResult{Err: kerr.RebalanceInProgress}
	}
	m.syncCh = make(chan SyncResult, 1)
	ch := m.syncCh
	g.scheduleSessionLocked(m)
	if m.id != g.mu.leader {
		return ch, SyncResult{}
	}
	assignments := make(map[string][]byte, len(g.mu.members))
	for id := range g.mu.members {
		assignments[id] = req.Assignments[id]
		if assignments[id] == nil {
			assignments[id] = []byte{}
		}
	}
	if err := g.storeLocked(assignments); err != nil {
		g.propagateSyncErrorLocked(err)
		g.prepareRebalanceLocked("storing the assignment failed")
		return ch, SyncResult{}
	}
	for id, a := range assignments {
		mm := g.mu.members[id]
		mm.assignment = a
		if mm.syncCh != nil {
			mm.syncCh <- g.syncResultLocked(mm)
			mm.syncCh = nil
			g.scheduleSessionLocked(mm)
		}
	}
	g.stopPhaseLocked()
	g.transitionLocked(StateStable)
	return ch, SyncResult{}
}

func (g *Group) syncResultLocked(m *member) SyncResult {
	return SyncResult{ProtocolType: g.mu.protocolType, ProtocolName: g.mu.protocolName, Assignment: m.assignment}
}

// Heartbeat keeps a member's session alive and tells it whether to
// rejoin (REBALANCE_IN_PROGRESS).
func (c *Coordinator) Heartbeat(groupID, memberID string, instanceID *string, generation int32) error {
	if groupID == "" {
		return kerr.InvalidGroupID
	}
	g, err := c.lockGroup(groupID, false)
	if err != nil {
		return err
	}
	if g == nil {
		return kerr.UnknownMemberID
	}
	defer g.mu.Unlock()
	if g.mu.consumer != nil {
		return g.classicHeartbeatConsumerLocked(memberID, instanceID, generation)
	}
	if g.mu.state == StateEmpty {
		return kerr.UnknownMemberID
	}
	m, err := g.validateMemberLocked(memberID, instanceID)
	if err != nil {
		return err
	}
	switch g.mu.state {
	case StateCompletingRebalance:
		// A member may heartbeat between its JoinGroup response and
		// its SyncGroup.
		g.scheduleSessionLocked(m)
		return nil
	case StatePreparingRebalance:
		g.scheduleSessionLocked(m)
		return kerr.RebalanceInProgress
	}
	if generation != g.mu.generation {
		return kerr.IllegalGeneration
	}
	g.scheduleSessionLocked(m)
	return nil
}

// LeaveGroup removes members (LeaveGroup v3+ names several, static ones by
// instance id). It returns a group-level error, or one error per member.
func (c *Coordinator) LeaveGroup(groupID string, members []LeaveMember) (error, []error) {
	if groupID == "" {
		return kerr.InvalidGroupID, nil
	}
	g, err := c.lockGroup(groupID, false)
	if err != nil {
		return err, nil
	}
	errs := make([]error, len(members))
	if g == nil {
		for i := range errs {
			errs[i] = kerr.UnknownMemberID
		}
		return nil, errs
	}
	defer g.mu.Unlock()
	for i, lm := range members {
		errs[i] = g.leaveLocked(lm)
	}
	return nil, errs
}

func (g *Group) leaveLocked(lm LeaveMember) error {
	if g.mu.consumer != nil {
		return g.classicLeaveConsumerLocked(lm)
	}
	if lm.InstanceID != nil {
		cur, ok := g.mu.static[*lm.InstanceID]
		if !ok {
			return kerr.UnknownMemberID
		}
		if lm.MemberID != "" && lm.MemberID != cur {
			return kerr.FencedInstanceID
		}
		lm.MemberID = cur
	}
	if t, ok := g.mu.pending[lm.MemberID]; ok {
		t.Stop()
		delete(g.mu.pending, lm.MemberID)
		g.tryCompleteJoinLocked()
		return nil
	}
	m, ok := g.mu.members[lm.MemberID]
	if !ok {
		return kerr.UnknownMemberID
	}
	g.removeMemberAndUpdateLocked(m, "member "+m.id+" left")
	return nil
}
