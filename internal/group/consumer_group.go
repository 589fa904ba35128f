package group

// The KIP-848 consumer group protocol: ConsumerGroupHeartbeat, following
// Kafka's GroupMetadataManager / ConsumerGroup / CurrentAssignmentBuilder.
//
// Three epochs drive a group. The group epoch is bumped whenever the
// group's membership or subscriptions change (a member joins, leaves, is
// fenced, changes its subscription, or a subscribed topic changes). The
// target assignment epoch is the group epoch the target assignment (each
// member's share, computed by a server-side assignor) was computed for;
// it catches up with the group epoch on the next heartbeat. A member's
// epoch is the target epoch it has reconciled to.
//
// Reconciliation is revoke-then-assign: a member first gets a response
// assignment without the partitions it must give up (state
// UNREVOKED_PARTITIONS, epoch unchanged); once a heartbeat reports it no
// longer owns them, it moves to the target epoch and gets the partitions
// of its target that no other member still owns. Partitions still owned
// elsewhere come on a later heartbeat (state UNRELEASED_PARTITIONS). So a
// partition never has two owners.
//
// A consumer group lives in a Group (group.go) whose mu.consumer is set;
// the classic fields of such a group stay empty, so the classic APIs find
// no members in it.

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// Special member epochs of ConsumerGroupHeartbeat.
const (
	// leaveEpoch: the member leaves the group.
	leaveEpoch = -1
	// staticLeaveEpoch: a static member leaves temporarily; it keeps its
	// assignment until its session expires or its instance rejoins.
	staticLeaveEpoch = -2
)

// memberState is a member's reconciliation state (Kafka's MemberState),
// with its on-disk value.
type memberState int8

const (
	// memberStable: the member has reconciled to its epoch's target.
	memberStable memberState = 0
	// memberUnrevoked: the member must revoke partitions first.
	memberUnrevoked memberState = 1
	// memberUnreleased: some of its target is still owned by others.
	memberUnreleased memberState = 2
)

// consumerMember is one member of a consumer group, guarded by its
// group's lock.
type consumerMember struct {
	id string
	memberMetadata
	re *regexp.Regexp // compiled regex, nil without one
	// mayDescribe filters what re matches (ConsumerHeartbeatRequest.
	// MayDescribe, from the member's last heartbeat); nil allows all.
	mayDescribe func(topic string) bool

	epoch, prevEpoch int32
	state            memberState
	// assigned are the partitions it owns; revoking those it must
	// still give up (owned too until it reports them gone).
	assigned, revoking assignment

	session       *time.Timer
	sessionSeq    uint64
	revocation    *time.Timer // bounds UNREVOKED_PARTITIONS by the rebalance timeout
	revocationSeq uint64
	// classicWait bounds, by the rebalance timeout, a classic member's
	// wait to rejoin (told REBALANCE_IN_PROGRESS) or to sync (after its
	// JoinGroup); see migration.go.
	classicWait     *time.Timer
	classicWaitSeq  uint64
	classicWaitKind classicWaitKind
}

// cloneState copies the member's data, not its timers.
func (m *consumerMember) cloneState() *consumerMember {
	c := &consumerMember{id: m.id, memberMetadata: m.memberMetadata, re: m.re,
		epoch: m.epoch, prevEpoch: m.prevEpoch, state: m.state,
		assigned: m.assigned.clone(), revoking: m.revoking.clone()}
	c.topics = slices.Clone(m.topics)
	return c
}

// consumerGroup is the KIP-848 state of a group, guarded by its Group's
// lock.
type consumerGroup struct {
	epoch           int32
	assignmentEpoch int32
	members         map[string]*consumerMember
	static          map[string]string // instance id -> member id
	// target is each member's target assignment at assignmentEpoch.
	target map[string]assignment
	// subscribed are the existing topics the group subscribes to, as
	// they were when the target was computed: a difference means the
	// target is stale.
	subscribed map[string]topicMeta
	// subscribedKnown is false after a load without topic metadata:
	// the first heartbeat then takes the topics as they are.
	subscribedKnown bool
	// owners maps each partition owned by a member (assigned or being
	// revoked) to that member.
	owners map[partitionRef]string
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{
		members: map[string]*consumerMember{},
		static:  map[string]string{},
		target:  map[string]assignment{},
		owners:  map[partitionRef]string{},
	}
}

// stateName is the group state as ConsumerGroupDescribe and ListGroups
// report it (Kafka's ConsumerGroupState).
func (cg *consumerGroup) stateName() string {
	if len(cg.members) == 0 {
		return "Empty"
	}
	if cg.assignmentEpoch < cg.epoch {
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || m.state != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

func (cg *consumerGroup) setOwners(m *consumerMember, owner string) {
	for _, a := range []assignment{m.assigned, m.revoking} {
		for t, ps := range a {
			for _, p := range ps {
				ref := partitionRef{t, p}
				if owner == "" {
					if cg.owners[ref] == m.id {
						delete(cg.owners, ref)
					}
				} else {
					cg.owners[ref] = owner
				}
			}
		}
	}
}

// install puts m in the group in place of old (nil for a new member),
// handing over old's timers.
func (cg *consumerGroup) install(m, old *consumerMember) {
	if old != nil {
		cg.setOwners(old, "")
		m.session, m.sessionSeq = old.session, old.sessionSeq
		m.revocation, m.revocationSeq = old.revocation, old.revocationSeq
		m.classicWait, m.classicWaitSeq, m.classicWaitKind = old.classicWait, old.classicWaitSeq, old.classicWaitKind
		if old.instanceID != nil && cg.static[*old.instanceID] == old.id {
			delete(cg.static, *old.instanceID)
		}
		if old.id != m.id {
			delete(cg.members, old.id)
			if t, ok := cg.target[old.id]; ok {
				delete(cg.target, old.id)
				cg.target[m.id] = t
			}
		}
	}
	cg.members[m.id] = m
	cg.setOwners(m, m.id)
	if m.instanceID != nil {
		cg.static[*m.instanceID] = m.id
	}
}

// remove takes m out of the group (not its records).
func (cg *consumerGroup) remove(m *consumerMember) {
	cg.setOwners(m, "")
	delete(cg.members, m.id)
	delete(cg.target, m.id)
	if m.instanceID != nil && cg.static[*m.instanceID] == m.id {
		delete(cg.static, *m.instanceID)
	}
	stopMemberTimers(m)
}

func stopMemberTimers(m *consumerMember) {
	if m.session != nil {
		m.session.Stop()
	}
	m.sessionSeq++
	if m.revocation != nil {
		m.revocation.Stop()
	}
	m.revocationSeq++
	m.stopClassicWait()
}

// TopicPartitions are partitions of one topic, by topic id.
type TopicPartitions struct {
	TopicID    [16]byte
	Partitions []int32
}

// ConsumerHeartbeatRequest is one ConsumerGroupHeartbeat. Nil fields mean
// "unchanged since the last heartbeat", as on the wire.
type ConsumerHeartbeatRequest struct {
	// Version is the request version: from v1 the client generates the
	// member id; in v0 the coordinator does on the first heartbeat.
	Version     int16
	GroupID     string
	MemberID    string
	MemberEpoch int32
	InstanceID  *string
	RackID      *string
	// RebalanceTimeoutMs is -1 when unchanged.
	RebalanceTimeoutMs   int32
	SubscribedTopicNames []string
	SubscribedTopicRegex *string
	ServerAssignor       *string
	// Owned are the partitions the member owns; nil when not reported.
	Owned      []TopicPartitions
	ClientID   string
	ClientHost string
	// MayDescribe, if set, is the member's DESCRIBE permission on a topic
	// (the broker's authorizer): a regex subscribes only to the matching
	// topics it allows, as Kafka 4 filters resolved regexes by the
	// member's ACLs. nil allows every topic.
	MayDescribe func(topic string) bool
}

// ConsumerHeartbeatResult is the ConsumerGroupHeartbeat answer. Err wraps
// a kerr code; Assignment is only meaningful when HasAssignment.
type ConsumerHeartbeatResult struct {
	Err               error
	MemberID          string
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	HasAssignment     bool
	Assignment        []TopicPartitions
}

func invalidRequest(msg string) error { return fmt.Errorf("%w: %s", kerr.InvalidRequest, msg) }

// validateHeartbeat is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
func validateHeartbeat(req *ConsumerHeartbeatRequest) (*regexp.Regexp, error) {
	if req.GroupID == "" {
		return nil, fmt.Errorf("%w: GroupId can't be empty", kerr.InvalidGroupID)
	}
	if req.MemberID == "" && (req.Version >= 1 || req.MemberEpoch != 0) {
		return nil, invalidRequest("MemberId can't be empty.")
	}
	if req.InstanceID != nil && *req.InstanceID == "" {
		return nil, invalidRequest("InstanceId can't be empty.")
	}
	if req.RackID != nil && *req.RackID == "" {
		return nil, invalidRequest("RackId can't be empty.")
	}
	switch {
	case req.MemberEpoch == 0:
		if req.RebalanceTimeoutMs == -1 {
			return nil, invalidRequest("RebalanceTimeoutMs must be provided in first request.")
		}
		if req.Owned == nil || len(req.Owned) > 0 {
			return nil, invalidRequest("TopicPartitions must be empty when (re-)joining.")
		}
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return nil, invalidRequest("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null.")
		}
	case req.MemberEpoch == staticLeaveEpoch:
		if req.InstanceID == nil {
			return nil, invalidRequest("InstanceId can't be null.")
		}
	case req.MemberEpoch < staticLeaveEpoch:
		return nil, invalidRequest("MemberEpoch is invalid.")
	}
	if req.SubscribedTopicRegex == nil || *req.SubscribedTopicRegex == "" {
		return nil, nil
	}
	// Kafka compiles the regex with RE2/J and requires the whole topic
	// name to match (Pattern.matcher(topic).matches()). Go's regexp is
	// the same RE2 syntax: both refuse back-references, look-arounds and
	// possessive quantifiers, both take \p{Greek}-style Unicode classes
	// and (?i) flags; what one refuses the other does, so a refused regex
	// is INVALID_REGULAR_EXPRESSION as in Kafka.
	re, err := regexp.Compile("^(?:" + *req.SubscribedTopicRegex + ")$")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", kerr.InvalidRegularExpression, err)
	}
	return re, nil
}

// ConsumerGroupHeartbeat handles one ConsumerGroupHeartbeat: joins,
// subscription updates, reconciliation, and leaves (member epoch -1, or
// -2 for a static member leaving temporarily).
func (c *Coordinator) ConsumerGroupHeartbeat(req ConsumerHeartbeatRequest) ConsumerHeartbeatResult {
	fail := func(err error) ConsumerHeartbeatResult {
		return ConsumerHeartbeatResult{Err: err, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}
	}
	re, err := validateHeartbeat(&req)
	if err != nil {
		return fail(err)
	}
	if req.ServerAssignor != nil && !slices.Contains(c.cfg.ConsumerAssignors, *req.ServerAssignor) {
		return fail(fmt.Errorf("%w: assignor %q is not one of group.consumer.assignors %v",
			kerr.UnsupportedAssignor, *req.ServerAssignor, c.cfg.ConsumerAssignors))
	}
	if err := c.CheckOwner(req.GroupID); err != nil {
		return fail(err)
	}
	g, err := c.lockGroup(req.GroupID, req.MemberEpoch == 0)
	if err != nil {
		return fail(err)
	}
	if g == nil {
		return fail(fmt.Errorf("%w: group %s does not exist", kerr.GroupIDNotFound, req.GroupID))
	}
	defer g.mu.Unlock()
	if g.mu.consumer == nil {
		if err := g.becomeConsumerGroupLocked(req.MemberEpoch == 0); err != nil {
			return fail(err)
		}
	}
	var res ConsumerHeartbeatResult
	switch req.MemberEpoch {
	case leaveEpoch, staticLeaveEpoch:
		res = g.consumerLeaveLocked(req)
	default:
		res = g.consumerHeartbeatLocked(req, re)
	}
	res.HeartbeatInterval = c.consumerHeartbeatInterval(g.id)
	g.removeIfUnusedLocked()
	return res
}

// becomeConsumerGroupLocked turns an empty classic group (or one that
// only holds offsets) into a consumer group, as Kafka converts it on the
// first consumer-protocol join; a classic group with members is upgraded
// when a member joins (migration.go) and group.consumer.migration.policy
// allows it.
func (g *Group) becomeConsumerGroupLocked(joining bool) error {
	if len(g.mu.members) > 0 && joining {
		return g.upgradeLocked()
	}
	if len(g.mu.members) > 0 || len(g.mu.pending) > 0 || g.mu.state != StateEmpty {
		return fmt.Errorf("%w: group %s is not a consumer group", kerr.GroupIDNotFound, g.id)
	}
	if g.mu.generation > 0 || g.mu.protocolType != "" {
		// Its classic metadata record must not resurrect it on load.
		if err := g.c.appendRecords(g.partition, []kv{{key: groupMetadataKey(g.id)}}); err != nil {
			return err
		}
	}
	g.mu.consumer = newConsumerGroup()
	g.mu.protocolType = "consumer"
	g.mu.protocolName, g.mu.leader, g.mu.generation = "", "", 0
	return nil
}

// consumerHeartbeatLocked is a join (epoch 0) or a heartbeat of a member.
func (g *Group) consumerHeartbeatLocked(req ConsumerHeartbeatRequest, re *regexp.Regexp) ConsumerHeartbeatResult {
	cg := g.mu.consumer
	fail := func(err error) ConsumerHeartbeatResult {
		return ConsumerHeartbeatResult{Err: err, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}
	}
	owned := ownedAssignment(req.Owned)
	var recs []kv
	bump := false
	var old, m *consumerMember
	var replaced *consumerMember // a static member whose instance rejoined
	if req.MemberEpoch == 0 {
		if req.InstanceID != nil {
			if id, ok := cg.static[*req.InstanceID]; ok && id != req.MemberID {
				prev := cg.members[id]
				if prev.epoch != staticLeaveEpoch {
					return fail(fmt.Errorf("%w: instance %s is used by member %s", kerr.UnreleasedInstanceID, *req.InstanceID, id))
				}
				// KIP-848 static membership: the new member takes
				// over the old one's assignment and epoch.
				replaced = prev
				m = prev.cloneState()
				m.id = req.MemberID
				m.epoch, m.state = prev.prevEpoch, memberStable
				recs = append(recs, memberTombstones(g.id, prev.id)...)
			}
		}
		if m == nil {
			if existing := cg.members[req.MemberID]; existing != nil && req.MemberID != "" {
				// A known member joining again (it was fenced
				// or lost its state) starts over: it has
				// abandoned its partitions, so the new
				// incarnation replaces the old one.
				recs = append(recs, memberTombstones(g.id, existing.id)...)
				old = existing
			} else if max := g.c.cfg.ConsumerMaxSize; max > 0 && len(cg.members) >= max {
				return fail(fmt.Errorf("%w: group %s has reached group.consumer.max.size %d", kerr.GroupMaxSizeReached, g.id, max))
			}
			id := req.MemberID
			if id == "" {
				id = newUUIDMemberID()
			}
			m = &consumerMember{id: id, assigned: assignment{}, revoking: assignment{}}
			bump = true
		}
	} else {
		old = cg.members[req.MemberID]
		if old == nil {
			return fail(fmt.Errorf("%w: member %s is not in group %s", kerr.UnknownMemberID, req.MemberID, g.id))
		}
		if req.InstanceID != nil && (old.instanceID == nil || *old.instanceID != *req.InstanceID) {
			return fail(fmt.Errorf("%w: member %s does not own instance %s", kerr.FencedInstanceID, old.id, *req.InstanceID))
		}
		if err := checkMemberEpoch(old, req.MemberEpoch, owned); err != nil {
			return fail(err)
		}
		m = old.cloneState()
	}
	metaChanged := m.applyRequest(req, re)
	if metaChanged.subscription {
		bump = true
	}
	if req.MemberEpoch == 0 {
		metaChanged.any = true
	}

	topics := g.c.topicsSnapshot()
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
	if metaChanged.any {
		recs = append(recs, memberMetadataRecord(g.id, m.id, m.memberMetadata))
	}
	target, targetEpoch := cg.target, cg.assignmentEpoch
	if replaced != nil {
		target = maps.Clone(target)
		if t, ok := target[replaced.id]; ok {
			delete(target, replaced.id)
			target[m.id] = t
			recs = append(recs, targetMemberRecord(g.id, m.id, t))
		}
	}
	recs, target, targetEpoch = g.retargetLocked(recs, epoch, subs, m, removed, target, targetEpoch)
	before := m.cloneState()
	reconcile(m, target[m.id], targetEpoch, cg.ownedByOther(m, replaced), owned)
	if req.MemberEpoch == 0 || m.epoch != before.epoch || m.state != before.state ||
		!m.assigned.equal(before.assigned) || !m.revoking.equal(before.revoking) {
		recs = append(recs, currentAssignmentRecord(g.id, m))
	}
	if err := g.c.appendRecords(g.partition, recs); err != nil {
		return fail(err)
	}

	g.commitMemberLocked(m, old, replaced, epoch, subs, target, targetEpoch)
	g.syncConsumerStateLocked()

	res := ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: m.epoch}
	if req.MemberEpoch == 0 || req.Owned != nil || old == nil || !m.assigned.equal(old.assigned) {
		res.HasAssignment = true
		res.Assignment = assignmentList(m.assigned)
	}
	return res
}

// checkMemberEpoch is Kafka's throwIfConsumerGroupMemberEpochIsInvalid:
// a newer epoch than the member's is fenced; an older one is accepted
// only as the previous epoch from a member that lost the response bumping
// it and owns nothing beyond its assignment.
func checkMemberEpoch(m *consumerMember, epoch int32, owned assignment) error {
	if epoch == m.epoch {
		return nil
	}
	if epoch < m.epoch && epoch == m.prevEpoch && owned != nil && owned.minus(m.assigned).size() == 0 {
		return nil
	}
	return fmt.Errorf("%w: member %s sent epoch %d, its epoch is %d", kerr.FencedMemberEpoch, m.id, epoch, m.epoch)
}

// metaChange reports what a heartbeat changed in a member's metadata.
type metaChange struct{ any, subscription bool }

// applyRequest copies the request's non-null fields into m.
func (m *consumerMember) applyRequest(req ConsumerHeartbeatRequest, re *regexp.Regexp) metaChange {
	var ch metaChange
	setStr := func(dst **string, v *string) {
		if v != nil && (*dst == nil || **dst != *v) {
			s := *v
			*dst = &s
			ch.any = true
		}
	}
	if req.MayDescribe != nil {
		m.mayDescribe = req.MayDescribe
	}
	setStr(&m.instanceID, req.InstanceID)
	setStr(&m.rackID, req.RackID)
	setStr(&m.serverAssignor, req.ServerAssignor)
	if m.clientID != req.ClientID || m.clientHost != req.ClientHost {
		m.clientID, m.clientHost = req.ClientID, req.ClientHost
		ch.any = true
	}
	if req.RebalanceTimeoutMs != -1 && req.RebalanceTimeoutMs != m.rebalanceTimeoutMs {
		m.rebalanceTimeoutMs = req.RebalanceTimeoutMs
		ch.any = true
	}
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(names)
		names = slices.Compact(names)
		if !slices.Equal(names, m.topics) {
			m.topics = names
			ch.any, ch.subscription = true, true
		}
	}
	if req.SubscribedTopicRegex != nil {
		var cur string
		if m.regex != nil {
			cur = *m.regex
		}
		if cur != *req.SubscribedTopicRegex || m.regex == nil {
			if *req.SubscribedTopicRegex == "" {
				m.regex, m.re = nil, nil
			} else {
				s := *req.SubscribedTopicRegex
				m.regex, m.re = &s, re
			}
			if cur != *req.SubscribedTopicRegex {
				ch.any, ch.subscription = true, true
			}
		}
	}
	return ch
}

// subscription resolves the group's subscriptions, with override in place
// of the member of the same id and without the member removed, against
// topics: the existing topics some member subscribes to by name or regex.
// A regex is matched against every topic name, internal ones included, as
// Kafka 4's GroupMetadataManager.refreshRegularExpressions scans the whole
// image: `__.*` subscribes to __consumer_offsets, `.*` too.
func (cg *consumerGroup) subscription(topics map[string]topicMeta, override *consumerMember, removed string) map[string]topicMeta {
	out := map[string]topicMeta{}
	add := func(m *consumerMember) {
		for _, name := range m.topics {
			if t, ok := topics[name]; ok {
				out[name] = t
			}
		}
		if m.re != nil {
			for name, t := range topics {
				if m.regexMatches(name) {
					out[name] = t
				}
			}
		}
	}
	for id, m := range cg.members {
		if id == removed || (override != nil && id == override.id) {
			continue
		}
		add(m)
	}
	if override != nil {
		add(override)
	}
	return out
}

// regexMatches reports whether m's regex subscribes it to the topic: the
// whole name matches and the member may describe it.
func (m *consumerMember) regexMatches(name string) bool {
	return m.re != nil && m.re.MatchString(name) && (m.mayDescribe == nil || m.mayDescribe(name))
}

// memberTopics are the ids of the topics in subs that m subscribes to.
func memberTopics(m *consumerMember, subs map[string]topicMeta) []metadata.Uuid {
	var ids []metadata.Uuid
	for name, t := range subs {
		if slices.Contains(m.topics, name) || m.regexMatches(name) {
			ids = append(ids, t.id)
		}
	}
	return ids
}

// ownedByOther reports whether a partition is owned by a member other than
// m and the static incarnation m replaces.
func (cg *consumerGroup) ownedByOther(m, replaced *consumerMember) func(partitionRef) bool {
	return func(ref partitionRef) bool {
		o, ok := cg.owners[ref]
		return ok && o != m.id && (replaced == nil || o != replaced.id)
	}
}

// retargetLocked recomputes the target, with m's update (and without the
// member removed), when the group epoch has passed the assignment epoch,
// appending the changed members' target records and the new assignment
// epoch to recs.
func (g *Group) retargetLocked(recs []kv, epoch int32, subs map[string]topicMeta, m *consumerMember, removed string, target map[string]assignment, targetEpoch int32) ([]kv, map[string]assignment, int32) {
	if epoch <= targetEpoch {
		return recs, target, targetEpoch
	}
	target, changed := g.mu.consumer.computeTarget(g.c.cfg.ConsumerAssignors, subs, m, removed, target)
	for _, id := range changed {
		recs = append(recs, targetMemberRecord(g.id, id, target[id]))
	}
	return append(recs, targetEpochRecord(g.id, epoch)), target, epoch
}

// commitMemberLocked makes an appended update of member m (old before it,
// nil for a new member) the group's state: the static incarnation it
// replaced goes, and the group takes the new epoch, subscriptions and
// target.
func (g *Group) commitMemberLocked(m, old, replaced *consumerMember, epoch int32, subs map[string]topicMeta, target map[string]assignment, targetEpoch int32) {
	cg := g.mu.consumer
	if replaced != nil {
		cg.remove(replaced)
	}
	cg.epoch, cg.subscribed, cg.subscribedKnown = epoch, subs, true
	cg.target, cg.assignmentEpoch = target, targetEpoch
	cg.install(m, old)
	g.scheduleConsumerSessionLocked(m)
	g.scheduleRevocationLocked(m, old)
}

// computeTarget runs the group's assignor over its members (override in
// place of the member of the same id, without the member removed: a static
// member's old incarnation) and returns the new target and the members
// whose target changed.
func (cg *consumerGroup) computeTarget(configured []string, subs map[string]topicMeta, override *consumerMember, removed string, prev map[string]assignment) (map[string]assignment, []string) {
	members := map[string]*consumerMember{}
	for id, m := range cg.members {
		if id != removed {
			members[id] = m
		}
	}
	if override != nil {
		members[override.id] = override
	}
	topics := map[metadata.Uuid]topicMeta{}
	for _, t := range subs {
		topics[t.id] = t
	}
	var specs []assignorMember
	for _, id := range slices.Sorted(maps.Keys(members)) {
		// A static member that left temporarily (epoch -2) stays
		// in the assignment until its session ends, as in Kafka.
		m := members[id]
		specs = append(specs, assignorMember{id: id, topics: memberTopics(m, subs), current: prev[id]})
	}
	a := assignors[preferredAssignor(configured, members)]
	next := a.assign(specs, topics)
	var changed []string
	for _, id := range slices.Sorted(maps.Keys(next)) {
		if p, ok := prev[id]; !ok || !p.equal(next[id]) {
			changed = append(changed, id)
		}
	}
	return next, changed
}

// preferredAssignor is Kafka's: the server assignor most members ask for
// (ties to the configured order), else the first configured one.
func preferredAssignor(configured []string, members map[string]*consumerMember) string {
	votes := map[string]int{}
	for _, m := range members {
		if m.serverAssignor != nil {
			votes[*m.serverAssignor]++
		}
	}
	best := configured[0]
	for _, name := range configured {
		if votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

// reconcile moves m toward its target (Kafka's CurrentAssignmentBuilder).
// owned is what the member reported owning, nil when it did not say.
func reconcile(m *consumerMember, target assignment, targetEpoch int32, ownedByOther func(partitionRef) bool, owned assignment) {
	if target == nil {
		target = assignment{}
	}
	if m.state == memberUnrevoked {
		if owned == nil || owned.intersect(m.revoking).size() > 0 {
			return // still revoking
		}
		m.revoking = assignment{}
		m.state = memberStable
		// Revoked: the member may now move to the target epoch.
	} else if m.state == memberStable && m.epoch == targetEpoch {
		return
	}
	keep := m.assigned.intersect(target)
	if revoke := m.assigned.minus(target); revoke.size() > 0 {
		m.assigned, m.revoking, m.state = keep, revoke, memberUnrevoked
		return
	}
	m.state = memberStable
	for t, ps := range target.minus(m.assigned) {
		for _, p := range ps {
			if ownedByOther(partitionRef{t, p}) {
				m.state = memberUnreleased
				continue
			}
			keep.add(t, p)
		}
	}
	if m.epoch != targetEpoch {
		m.prevEpoch, m.epoch = m.epoch, targetEpoch
	}
	m.assigned = keep
}

func ownedAssignment(ts []TopicPartitions) assignment {
	if ts == nil {
		return nil
	}
	a := assignment{}
	for _, t := range ts {
		for _, p := range t.Partitions {
			a.add(t.TopicID, p)
		}
	}
	return a
}

func assignmentList(a assignment) []TopicPartitions {
	out := []TopicPartitions{}
	for _, id := range a.topicIDs() {
		out = append(out, TopicPartitions{TopicID: id, Partitions: slices.Clone(a[id])})
	}
	return out
}

// consumerLeaveLocked handles member epoch -1 (leave) and -2 (a static
// member leaving temporarily).
func (g *Group) consumerLeaveLocked(req ConsumerHeartbeatRequest) ConsumerHeartbeatResult {
	cg := g.mu.consumer
	fail := func(err error) ConsumerHeartbeatResult {
		return ConsumerHeartbeatResult{Err: err, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}
	}
	var m *consumerMember
	if req.InstanceID != nil {
		id, ok := cg.static[*req.InstanceID]
		if !ok {
			return fail(fmt.Errorf("%w: no member with instance %s", kerr.UnknownMemberID, *req.InstanceID))
		}
		if id != req.MemberID {
			return fail(fmt.Errorf("%w: instance %s is owned by member %s", kerr.FencedInstanceID, *req.InstanceID, id))
		}
		m = cg.members[id]
	} else if m = cg.members[req.MemberID]; m == nil {
		return fail(fmt.Errorf("%w: member %s is not in group %s", kerr.UnknownMemberID, req.MemberID, g.id))
	}
	if req.MemberEpoch == staticLeaveEpoch {
		n := m.cloneState()
		if n.epoch != staticLeaveEpoch {
			n.prevEpoch = n.epoch
		}
		n.epoch = staticLeaveEpoch
		if err := g.c.appendRecords(g.partition, []kv{currentAssignmentRecord(g.id, n)}); err != nil {
			return fail(err)
		}
		cg.install(n, m)
		g.syncConsumerStateLocked()
		return ConsumerHeartbeatResult{MemberID: n.id, MemberEpoch: staticLeaveEpoch}
	}
	if err := g.fenceConsumerMemberLocked(m, "left"); err != nil {
		return fail(err)
	}
	return ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: leaveEpoch}
}

// fenceConsumerMemberLocked removes m (it left, or its session or
// revocation timed out): its records are deleted and the group epoch
// bumped, so the next heartbeat computes a target without it.
func (g *Group) fenceConsumerMemberLocked(m *consumerMember, why string) error {
	cg := g.mu.consumer
	recs := memberTombstones(g.id, m.id)
	recs = append(recs, groupEpochRecord(g.id, cg.epoch+1))
	if err := g.c.appendRecords(g.partition, recs); err != nil {
		return err
	}
	cg.remove(m)
	cg.epoch++
	g.syncConsumerStateLocked()
	g.c.logger.Info("consumer group member removed", "group", g.id, "member", m.id, "reason", why)
	// Downgraded, the classic group's generation is the epoch before
	// the leave, as Kafka converts the group instead of bumping it: the
	// classic members' commits at their epoch are still accepted.
	g.maybeDowngradeLocked(cg.epoch - 1)
	return nil
}

// syncConsumerStateLocked keeps the classic state field meaningful for
// the code shared with classic groups (offset expiry, deletion): Empty
// without members, Stable with.
func (g *Group) syncConsumerStateLocked() {
	want := StateStable
	if len(g.mu.consumer.members) == 0 {
		want = StateEmpty
	}
	if g.mu.state != want {
		g.transitionLocked(want)
	}
}

// scheduleConsumerSessionLocked (re)starts m's session: without a
// heartbeat within the group's consumer.session.timeout.ms, else
// group.consumer.session.timeout.ms (a classic member: its own session
// timeout), it is fenced.
func (g *Group) scheduleConsumerSessionLocked(m *consumerMember) {
	if m.session != nil {
		m.session.Stop()
	}
	m.sessionSeq++
	seq := m.sessionSeq
	m.session = time.AfterFunc(m.sessionTimeout(g), func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.mu.state == StateDead || g.mu.consumer == nil || g.mu.consumer.members[m.id] != m || m.sessionSeq != seq {
			return
		}
		if err := g.fenceConsumerMemberLocked(m, "session expired"); err != nil {
			g.c.logger.Warn("fencing expired consumer group member", "group", g.id, "member", m.id, "err", err)
		}
	})
}

// scheduleRevocationLocked bounds UNREVOKED_PARTITIONS: a member that
// does not revoke within its rebalance timeout is fenced, so its
// partitions can move on. The timer starts when the member enters the
// state and stops when it leaves it.
func (g *Group) scheduleRevocationLocked(m, old *consumerMember) {
	if m.state != memberUnrevoked {
		if m.revocation != nil {
			m.revocation.Stop()
			m.revocation = nil
		}
		m.revocationSeq++
		return
	}
	if old != nil && old.state == memberUnrevoked && m.revocation != nil {
		return
	}
	m.revocationSeq++
	seq := m.revocationSeq
	m.revocation = time.AfterFunc(time.Duration(m.rebalanceTimeoutMs)*time.Millisecond, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.mu.state == StateDead || g.mu.consumer == nil || g.mu.consumer.members[m.id] != m ||
			m.revocationSeq != seq || m.state != memberUnrevoked {
			return
		}
		if err := g.fenceConsumerMemberLocked(m, "did not revoke within its rebalance timeout"); err != nil {
			g.c.logger.Warn("fencing consumer group member", "group", g.id, "member", m.id, "err", err)
		}
	})
}

// newUUIDMemberID generates a member id as Kafka's v0 coordinator does: a
// random UUID, base64url without padding.
func newUUIDMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
