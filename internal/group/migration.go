package group

// Online migration between the classic and the consumer protocol (KIP-848,
// group.consumer.migration.policy), following Kafka's GroupMetadataManager:
//
//   - Upgrade: a consumer-protocol member joining a live classic group
//     converts it to a consumer group (policy upgrade or bidirectional).
//     Each classic member becomes a member of the consumer group that
//     still speaks the classic protocol, with its generation as member
//     epoch and its last assignment as both its current and its target
//     assignment, so nothing moves until the new member's join computes
//     a new target.
//   - Classic members in a consumer group are served by the consumer
//     group's state machine: a JoinGroup is answered at once (no join
//     phase, no leader) after reconciling the member toward its target
//     with the partitions its subscription says it owns; SyncGroup returns
//     its assigned partitions; Heartbeat answers REBALANCE_IN_PROGRESS
//     while it must rejoin (the group epoch moved past its epoch, it must
//     revoke partitions, or partitions it waits for were released).
//   - Downgrade: when the last consumer-protocol member leaves (or is
//     fenced) and classic members remain, the group becomes a classic
//     group again (policy downgrade or bidirectional), with the group
//     epoch before the leave as generation and the members' current
//     assignments, and
//     starts a rebalance so the classic members rejoin and assign among
//     themselves.
//
// Each conversion is persisted: tombstones for the old protocol's records
// and the new protocol's records, in one batch.

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
)

// consumerProtocolType is the classic protocol type of consumers, the only
// one a consumer group can take classic members of.
const consumerProtocolType = "consumer"

// isClassic reports whether m speaks the classic protocol.
func (m *consumerMember) isClassic() bool { return m.classic != nil }

// sessionTimeout is the member's session in g: its classic session
// timeout, or the group's consumer session timeout (group_config.go).
func (m *consumerMember) sessionTimeout(g *Group) time.Duration {
	if m.classic != nil {
		return time.Duration(m.classic.sessionTimeoutMs) * time.Millisecond
	}
	return g.c.consumerSessionTimeout(g.id)
}

// parseSubscription returns the first of protocols whose metadata is a
// consumer protocol subscription, as Kafka's deserializeSubscription.
func parseSubscription(protocols []Protocol) (string, *kmsg.ConsumerMemberMetadata, bool) {
	for _, p := range protocols {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(p.Metadata); err == nil {
			return p.Name, &md, true
		}
	}
	return "", nil, false
}

// namedToAssignment maps topic-name partitions to topic ids, dropping
// topics that do not exist.
func namedToAssignment(topics map[string]topicMeta, named map[string][]int32) assignment {
	a := assignment{}
	for name, ps := range named {
		t, ok := topics[name]
		if !ok {
			continue
		}
		for _, p := range ps {
			if p >= 0 && p < t.partitions {
				a.add(t.id, p)
			}
		}
	}
	return a
}

// assignmentBytes is a ConsumerMemberAssignment of a (topic names from
// topics) at the given version, as SyncGroup returns and GroupMetadataValue
// stores it.
func assignmentBytes(topics map[string]topicMeta, a assignment, version int16) []byte {
	names := map[metadata.Uuid]string{}
	for name, t := range topics {
		names[t.id] = name
	}
	ca := kmsg.NewConsumerMemberAssignment()
	ca.Version = min(max(version, 0), 3)
	for _, id := range a.topicIDs() {
		name, ok := names[id]
		if !ok {
			continue
		}
		t := kmsg.NewConsumerMemberAssignmentTopic()
		t.Topic, t.Partitions = name, slices.Clone(a[id])
		ca.Topics = append(ca.Topics, t)
	}
	slices.SortFunc(ca.Topics, func(x, y kmsg.ConsumerMemberAssignmentTopic) int {
		switch {
		case x.Topic < y.Topic:
			return -1
		case x.Topic > y.Topic:
			return 1
		}
		return 0
	})
	return ca.AppendTo(nil)
}

// --- upgrade ---

// upgradeLocked converts a live classic group to a consumer group (Kafka's
// convertToConsumerGroup) when a consumer-protocol member joins it; it
// fails with GROUP_ID_NOT_FOUND when the policy or the group does not
// allow it, as Kafka's validateOnlineUpgrade.
func (g *Group) upgradeLocked() error {
	cfg := &g.c.cfg
	switch {
	case !cfg.MigrationPolicy.upgradeAllowed():
		return fmt.Errorf("%w: cannot upgrade classic group %s to a consumer group: group.consumer.migration.policy is %s",
			kerr.GroupIDNotFound, g.id, cfg.MigrationPolicy)
	case g.mu.protocolType != consumerProtocolType:
		return fmt.Errorf("%w: cannot upgrade group %s of protocol type %q to a consumer group", kerr.GroupIDNotFound, g.id, g.mu.protocolType)
	case cfg.ConsumerMaxSize > 0 && len(g.mu.members) > cfg.ConsumerMaxSize:
		return fmt.Errorf("%w: cannot upgrade classic group %s: its %d members exceed group.consumer.max.size",
			kerr.GroupIDNotFound, g.id, len(g.mu.members))
	}
	topics := g.c.topicsSnapshot()
	cg := newConsumerGroup()
	gen := g.mu.generation
	cg.epoch, cg.assignmentEpoch = gen, gen
	var members []*consumerMember
	for _, id := range g.mu.order {
		cm := g.mu.members[id]
		protocols := cm.protocols
		if g.mu.protocolName != "" {
			// The generation's protocol first: its metadata is what
			// the member's assignment was computed from.
			protocols = slices.Clone(protocols)
			slices.SortStableFunc(protocols, func(x, y Protocol) int {
				if x.Name == g.mu.protocolName && y.Name != g.mu.protocolName {
					return -1
				}
				return 0
			})
		}
		_, sub, ok := parseSubscription(protocols)
		if !ok {
			return fmt.Errorf("%w: cannot upgrade classic group %s: member %s does not use the consumer protocol", kerr.GroupIDNotFound, g.id, id)
		}
		var ca kmsg.ConsumerMemberAssignment
		assigned := assignment{}
		if len(cm.assignment) > 0 && ca.ReadFrom(cm.assignment) == nil {
			named := map[string][]int32{}
			for _, t := range ca.Topics {
				named[t.Topic] = append(named[t.Topic], t.Partitions...)
			}
			assigned = namedToAssignment(topics, named)
		}
		topicNames := slices.Clone(sub.Topics)
		slices.Sort(topicNames)
		m := &consumerMember{id: id, epoch: gen, prevEpoch: gen, state: memberStable,
			assigned: assigned, revoking: assignment{}}
		m.memberMetadata = memberMetadata{instanceID: cm.instanceID, rackID: sub.Rack, clientID: cm.clientID, clientHost: cm.clientHost,
			topics: slices.Compact(topicNames), rebalanceTimeoutMs: int32(cm.rebalanceTimeout / time.Millisecond),
			classic: &classicMetadata{sessionTimeoutMs: int32(cm.sessionTimeout / time.Millisecond), protocols: slices.Clone(cm.protocols)}}
		members = append(members, m)
	}
	recs := []kv{{key: groupMetadataKey(g.id)}, groupEpochRecord(g.id, gen)}
	for _, m := range members {
		recs = append(recs, memberMetadataRecord(g.id, m.id, m.memberMetadata),
			targetMemberRecord(g.id, m.id, m.assigned), currentAssignmentRecord(g.id, m))
	}
	recs = append(recs, targetEpochRecord(g.id, gen))
	if err := g.c.appendRecords(g.partition, recs); err != nil {
		return err
	}
	// Appended: the classic state goes; its parked requests rejoin.
	g.stopPhaseLocked()
	for id, t := range g.mu.pending {
		t.Stop()
		delete(g.mu.pending, id)
	}
	for _, id := range slices.Clone(g.mu.order) {
		cm := g.mu.members[id]
		if cm.joinCh != nil {
			cm.joinCh <- JoinResult{Err: kerr.RebalanceInProgress, MemberID: id, Generation: -1}
			cm.joinCh = nil
		}
		if cm.syncCh != nil {
			cm.syncCh <- SyncResult{Err: kerr.RebalanceInProgress}
			cm.syncCh = nil
		}
		if cm.session != nil {
			cm.session.Stop()
		}
		cm.sessionSeq++
	}
	g.mu.members, g.mu.order, g.mu.static = map[string]*member{}, nil, map[string]string{}
	g.mu.pendingSync = map[string]bool{}
	g.mu.protocolName, g.mu.leader, g.mu.generation = "", "", 0
	g.mu.protocolType = consumerProtocolType
	g.mu.consumer = cg
	for _, m := range members {
		cg.target[m.id] = m.assigned.clone()
		cg.install(m, nil)
		g.scheduleConsumerSessionLocked(m)
	}
	cg.subscribed, cg.subscribedKnown = cg.subscription(topics, nil, ""), true
	g.syncConsumerStateLocked()
	g.c.logger.Info("classic group upgraded to a consumer group", "group", g.id, "members", len(members), "epoch", gen)
	return nil
}

// --- classic members in a consumer group ---

// classicWaitKind is what a classic member of a consumer group is expected
// to send next, within its rebalance timeout (Kafka's join and sync
// timeouts of classic members in a consumer group).
type classicWaitKind int8

const (
	noClassicWait classicWaitKind = iota
	// awaitRejoin: it was told REBALANCE_IN_PROGRESS.
	awaitRejoin
	// awaitSync: it got its JoinGroup response.
	awaitSync
)

func (m *consumerMember) stopClassicWait() {
	if m.classicWait != nil {
		m.classicWait.Stop()
		m.classicWait = nil
	}
	m.classicWaitSeq++
	m.classicWaitKind = noClassicWait
}

// scheduleClassicWaitLocked expects m's next JoinGroup or SyncGroup within
// its rebalance timeout; a member that does not send it is fenced, so its
// partitions move on. A rejoin wait already running is kept.
func (g *Group) scheduleClassicWaitLocked(m *consumerMember, kind classicWaitKind) {
	if kind == awaitRejoin && m.classicWaitKind == awaitRejoin {
		return
	}
	m.stopClassicWait()
	m.classicWaitKind = kind
	seq := m.classicWaitSeq
	id := m.id
	m.classicWait = time.AfterFunc(time.Duration(m.rebalanceTimeoutMs)*time.Millisecond, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.mu.state == StateDead || g.mu.consumer == nil {
			return
		}
		cur := g.mu.consumer.members[id]
		if cur == nil || cur.classicWaitSeq != seq {
			return
		}
		why := "did not rejoin within its rebalance timeout"
		if kind == awaitSync {
			why = "did not send SyncGroup within its rebalance timeout"
		}
		if err := g.fenceConsumerMemberLocked(cur, why); err != nil {
			g.c.logger.Warn("fencing classic member of a consumer group", "group", g.id, "member", id, "err", err)
		}
	})
}

// classicJoinConsumerLocked is a JoinGroup to a consumer group with members
// (Kafka's classicGroupJoinToConsumerGroup): answered at once.
func (g *Group) classicJoinConsumerLocked(req JoinRequest) JoinResult {
	cg := g.mu.consumer
	fail := func(err error) JoinResult { return JoinResult{Err: err, MemberID: req.MemberID, Generation: -1} }
	if req.ProtocolType != consumerProtocolType || len(req.Protocols) == 0 {
		return fail(fmt.Errorf("%w: group %s uses the consumer protocol; a classic member must join with protocol type %q",
			kerr.InconsistentGroupProtocol, g.id, consumerProtocolType))
	}
	protocolName, sub, ok := parseSubscription(req.Protocols)
	if !ok {
		return fail(fmt.Errorf("%w: no consumer protocol subscription among the member's protocols", kerr.InconsistentGroupProtocol))
	}
	if !cg.supportsClassicProtocols(req.MemberID, req.Protocols) {
		return fail(fmt.Errorf("%w: the member shares no protocol with the group's classic members", kerr.InconsistentGroupProtocol))
	}
	id := req.MemberID
	if id == "" {
		id = newUUIDMemberID()
		if req.RequireKnownMemberID && req.InstanceID == nil {
			// KIP-394, as for a classic group: the member comes
			// back with this id, and only then joins.
			return JoinResult{Err: kerr.MemberIDRequired, MemberID: id, Generation: -1}
		}
	}
	var recs []kv
	old := cg.members[id]
	var replaced *consumerMember
	if req.InstanceID != nil {
		if prevID, ok := cg.static[*req.InstanceID]; ok && prevID != id {
			// A static member's new incarnation takes its place.
			replaced = cg.members[prevID]
			recs = append(recs, memberTombstones(g.id, prevID)...)
		}
	}
	if old != nil && !old.isClassic() {
		return fail(fmt.Errorf("%w: member %s uses the consumer protocol", kerr.UnknownMemberID, id))
	}
	if old == nil && replaced == nil {
		if max := g.c.cfg.ConsumerMaxSize; max > 0 && len(cg.members) >= max {
			return fail(fmt.Errorf("%w: group %s has reached group.consumer.max.size %d", kerr.GroupMaxSizeReached, g.id, max))
		}
	}
	var m *consumerMember
	if old != nil {
		m = old.cloneState()
	} else {
		m = &consumerMember{id: id, assigned: assignment{}, revoking: assignment{}}
	}
	topicNames := slices.Clone(sub.Topics)
	slices.Sort(topicNames)
	topicNames = slices.Compact(topicNames)
	bump := old == nil || !slices.Equal(topicNames, m.topics)
	m.topics = topicNames
	m.instanceID, m.rackID = req.InstanceID, sub.Rack
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	m.rebalanceTimeoutMs = int32(req.RebalanceTimeout / time.Millisecond)
	m.serverAssignor, m.regex, m.re = nil, nil, nil
	m.classic = &classicMetadata{sessionTimeoutMs: int32(req.SessionTimeout / time.Millisecond), protocols: slices.Clone(req.Protocols)}

	topics := g.c.topicsSnapshot()
	// The partitions it reports owning: what it kept through the last
	// rebalance (cooperative), nothing for an eager member.
	named := map[string][]int32{}
	for _, t := range sub.OwnedPartitions {
		named[t.Topic] = append(named[t.Topic], t.Partitions...)
	}
	owned := namedToAssignment(topics, named)

	var removed string
	if replaced != nil {
		removed = replaced.id
	}
	subs := cg.subscription(topics, m, removed)
	if cg.subscribedKnown && !maps.Equal(subs, cg.subscribed) {
		bump = true
	}
	epoch := cg.epoch
	if bump {
		epoch++
		recs = append(recs, groupEpochRecord(g.id, epoch))
	}
	recs = append(recs, memberMetadataRecord(g.id, m.id, m.memberMetadata))
	target, targetEpoch := cg.target, cg.assignmentEpoch
	if replaced != nil {
		target = maps.Clone(target)
		delete(target, replaced.id)
	}
	recs, target, targetEpoch = g.retargetLocked(recs, epoch, subs, m, removed, target, targetEpoch)
	reconcile(m, target[m.id], targetEpoch, cg.ownedByOther(m, replaced), owned)
	recs = append(recs, currentAssignmentRecord(g.id, m))
	if err := g.c.appendRecords(g.partition, recs); err != nil {
		return fail(err)
	}
	g.commitMemberLocked(m, old, replaced, epoch, subs, target, targetEpoch)
	g.scheduleClassicWaitLocked(m, awaitSync)
	g.syncConsumerStateLocked()
	return JoinResult{MemberID: m.id, Generation: m.epoch, ProtocolType: consumerProtocolType, ProtocolName: protocolName}
}

// supportsClassicProtocols is Kafka's ConsumerGroup.supportsClassicProtocols:
// a joining classic member must share a protocol name with every other
// classic member.
func (cg *consumerGroup) supportsClassicProtocols(memberID string, protocols []Protocol) bool {
	for _, p := range protocols {
		all := true
		for id, m := range cg.members {
			if id == memberID || !m.isClassic() {
				continue
			}
			if !slices.ContainsFunc(m.classic.protocols, func(q Protocol) bool { return q.Name == p.Name }) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// classicMemberLocked finds a classic member of the consumer group.
func (g *Group) classicMemberLocked(memberID string, instanceID *string) (*consumerMember, error) {
	cg := g.mu.consumer
	if instanceID != nil {
		cur, ok := cg.static[*instanceID]
		if !ok {
			return nil, kerr.UnknownMemberID
		}
		if cur != memberID {
			return nil, kerr.FencedInstanceID
		}
	}
	m := cg.members[memberID]
	if m == nil || !m.isClassic() {
		return nil, fmt.Errorf("%w: member %s is not a classic member of consumer group %s", kerr.UnknownMemberID, memberID, g.id)
	}
	return m, nil
}

// classicSyncConsumerLocked is a SyncGroup to a consumer group (Kafka's
// classicGroupSyncToConsumerGroup): the member's assigned partitions.
func (g *Group) classicSyncConsumerLocked(req SyncRequest) SyncResult {
	m, err := g.classicMemberLocked(req.MemberID, req.InstanceID)
	if err != nil {
		return SyncResult{Err: err}
	}
	if req.Generation != m.epoch {
		return SyncResult{Err: fmt.Errorf("%w: generation %d, member epoch %d", kerr.IllegalGeneration, req.Generation, m.epoch)}
	}
	// The protocol its JoinGroup answer named.
	name, _, _ := parseSubscription(m.classic.protocols)
	if (req.ProtocolType != nil && *req.ProtocolType != consumerProtocolType) ||
		(req.ProtocolName != nil && *req.ProtocolName != name) {
		return SyncResult{Err: kerr.InconsistentGroupProtocol}
	}
	// A newer group epoch means the member must rejoin first, unless it
	// already did and must now finish revoking.
	if g.mu.consumer.epoch > m.epoch && m.state != memberUnrevoked {
		g.scheduleClassicWaitLocked(m, awaitRejoin)
		return SyncResult{Err: kerr.RebalanceInProgress}
	}
	g.scheduleConsumerSessionLocked(m)
	if m.classicWaitKind == awaitSync {
		m.stopClassicWait()
	}
	return SyncResult{ProtocolType: consumerProtocolType, ProtocolName: name,
		Assignment: assignmentBytes(g.c.topicsSnapshot(), m.assigned, m.subscriptionVersion(name))}
}

// subscriptionVersion is the version of the classic member's subscription
// in protocol name: its assignment is encoded at that version.
func (m *consumerMember) subscriptionVersion(name string) int16 {
	for _, p := range m.classic.protocols {
		if p.Name == name && len(p.Metadata) >= 2 {
			return int16(p.Metadata[0])<<8 | int16(p.Metadata[1])
		}
	}
	return 0
}

// classicHeartbeatConsumerLocked is a Heartbeat to a consumer group (Kafka's
// classicGroupHeartbeatToConsumerGroup).
func (g *Group) classicHeartbeatConsumerLocked(memberID string, instanceID *string, generation int32) error {
	m, err := g.classicMemberLocked(memberID, instanceID)
	if err != nil {
		return err
	}
	if generation != m.epoch {
		return fmt.Errorf("%w: generation %d, member epoch %d", kerr.IllegalGeneration, generation, m.epoch)
	}
	g.scheduleConsumerSessionLocked(m)
	cg := g.mu.consumer
	// Rejoin when the group moved on, when it must revoke, or when the
	// partitions it waits for have been released.
	if m.epoch < cg.epoch || m.state == memberUnrevoked ||
		(m.state == memberUnreleased && !cg.waitingOnUnreleased(m)) {
		g.scheduleClassicWaitLocked(m, awaitRejoin)
		return kerr.RebalanceInProgress
	}
	return nil
}

// waitingOnUnreleased reports whether some partition of m's target is
// still owned by another member.
func (cg *consumerGroup) waitingOnUnreleased(m *consumerMember) bool {
	for t, ps := range cg.target[m.id].minus(m.assigned) {
		for _, p := range ps {
			if o, ok := cg.owners[partitionRef{t, p}]; ok && o != m.id {
				return true
			}
		}
	}
	return false
}

// classicLeaveConsumerLocked is a LeaveGroup member of a consumer group.
func (g *Group) classicLeaveConsumerLocked(lm LeaveMember) error {
	cg := g.mu.consumer
	id := lm.MemberID
	if lm.InstanceID != nil {
		cur, ok := cg.static[*lm.InstanceID]
		if !ok {
			return kerr.UnknownMemberID
		}
		if id != "" && id != cur {
			return kerr.FencedInstanceID
		}
		id = cur
	}
	m := cg.members[id]
	if m == nil {
		return kerr.UnknownMemberID
	}
	return g.fenceConsumerMemberLocked(m, "left the group (LeaveGroup)")
}

// --- downgrade ---

// maybeDowngradeLocked converts the consumer group back to a classic group
// when only classic members are left and the policy allows it (Kafka's
// validateOnlineDowngrade and convertToClassicGroup).
func (g *Group) maybeDowngradeLocked(generation int32) {
	cg := g.mu.consumer
	if cg == nil || len(cg.members) == 0 || !g.c.cfg.MigrationPolicy.downgradeAllowed() {
		return
	}
	for _, m := range cg.members {
		if !m.isClassic() {
			return
		}
	}
	if max := g.c.cfg.MaxSize; max > 0 && len(cg.members) > max {
		g.c.logger.Info("not downgrading consumer group: more members than group.max.size", "group", g.id, "members", len(cg.members))
		return
	}
	topics := g.c.topicsSnapshot()
	ids := slices.Sorted(maps.Keys(cg.members))
	classic := map[string]*member{}
	for _, id := range ids {
		m := cg.members[id]
		name, _, _ := parseSubscription(m.classic.protocols)
		classic[id] = &member{id: id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
			sessionTimeout:   time.Duration(m.classic.sessionTimeoutMs) * time.Millisecond,
			rebalanceTimeout: time.Duration(m.rebalanceTimeoutMs) * time.Millisecond,
			protocolType:     consumerProtocolType, protocols: slices.Clone(m.classic.protocols),
			assignment: assignmentBytes(topics, m.assigned, m.subscriptionVersion(name))}
	}
	// Build the classic state, persist it with the consumer records'
	// tombstones, and only then make it the group's. The generation's
	// protocol is chosen as a classic group's (the first member leads).
	saved := struct {
		members          map[string]*member
		order            []string
		static           map[string]string
		gen              int32
		protocol, leader string
	}{g.mu.members, g.mu.order, g.mu.static, g.mu.generation, g.mu.protocolName, g.mu.leader}
	restore := func() {
		g.mu.members, g.mu.order, g.mu.static = saved.members, saved.order, saved.static
		g.mu.generation, g.mu.protocolName, g.mu.leader = saved.gen, saved.protocol, saved.leader
	}
	g.mu.members, g.mu.order, g.mu.static = map[string]*member{}, nil, map[string]string{}
	g.mu.generation, g.mu.leader = generation, ""
	g.mu.protocolType = consumerProtocolType
	for _, id := range ids {
		g.addMemberLocked(classic[id])
	}
	g.mu.protocolName = g.selectProtocolLocked()
	if g.mu.protocolName == "" {
		restore()
		g.c.logger.Info("not downgrading consumer group: its classic members share no protocol", "group", g.id)
		return
	}
	var recs []kv
	for _, id := range ids {
		recs = append(recs, memberTombstones(g.id, id)...)
	}
	recs = append(recs, consumerGroupTombstones(g.id)...)
	recs = append(recs, g.metadataRecordLocked(nil))
	if err := g.c.appendRecords(g.partition, recs); err != nil {
		restore()
		g.c.logger.Warn("downgrading consumer group", "group", g.id, "err", err)
		return
	}
	for _, m := range cg.members {
		stopMemberTimers(m)
	}
	g.mu.consumer = nil
	g.transitionLocked(StateStable)
	for _, m := range g.mu.members {
		g.scheduleSessionLocked(m)
	}
	g.c.logger.Info("consumer group downgraded to a classic group", "group", g.id, "members", len(ids), "generation", g.mu.generation)
	// The classic members rejoin and assign among themselves.
	g.prepareRebalanceLocked("downgrade of the consumer group to a classic group")
}
