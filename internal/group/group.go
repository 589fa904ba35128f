package group

import (
	"bytes"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a classic group's state (Kafka's ClassicGroupState).
type State int8

const (
	// StateEmpty: no members; the group may still hold offsets.
	StateEmpty State = iota
	// StatePreparingRebalance: waiting for members to (re)join.
	StatePreparingRebalance
	// StateCompletingRebalance: joined; waiting for the leader's assignment.
	StateCompletingRebalance
	// StateStable: every member has its assignment.
	StateStable
	// StateDead: the group is gone (deleted, expired, or moved away).
	StateDead
)

// String is the state's name as DescribeGroups and ListGroups report it.
func (s State) String() string {
	switch s {
	case StateEmpty:
		return "Empty"
	case StatePreparingRebalance:
		return "PreparingRebalance"
	case StateCompletingRebalance:
		return "CompletingRebalance"
	case StateStable:
		return "Stable"
	default:
		return "Dead"
	}
}

// Protocol is one assignment protocol a member supports, with its
// protocol-specific metadata (for consumers, a ConsumerMemberMetadata).
type Protocol struct {
	Name     string
	Metadata []byte
}

// member is one member of a classic group. It is guarded by its group's
// lock.
type member struct {
	id                               string
	instanceID                       *string // group.instance.id (KIP-345); nil for dynamic members
	clientID, clientHost             string
	sessionTimeout, rebalanceTimeout time.Duration
	protocolType                     string
	protocols                        []Protocol
	assignment                       []byte

	// joinCh is non-nil while the member awaits the end of the join
	// phase; syncCh while it awaits the leader's assignment. Both hold
	// one response, so completing never blocks on a gone connection.
	joinCh chan JoinResult
	syncCh chan SyncResult

	// session is the member's session timer; sessionSeq invalidates a
	// timer that fires after being superseded.
	session    *time.Timer
	sessionSeq uint64
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

func sameProtocols(a, b []Protocol) bool {
	return slices.EqualFunc(a, b, func(x, y Protocol) bool { return x.Name == y.Name && bytes.Equal(x.Metadata, y.Metadata) })
}

// Group is one consumer group: its membership state machine and its
// committed offsets. All fields under mu are guarded by it; see the package
// doc for the lock order.
type Group struct {
	id        string
	partition int32
	c         *Coordinator

	mu struct {
		sync.Mutex
		state State
		// stateTime is when the state last changed, Unix ms (Kafka's
		// currentStateTimestamp; offsets of an Empty group expire
		// relative to it, KIP-211).
		stateTime    int64
		generation   int32
		protocolType string // "" until the first member joins
		protocolName string // selected protocol of the generation
		leader       string
		members      map[string]*member
		order        []string          // member ids in join order
		static       map[string]string // group.instance.id -> member id
		// pending are member ids handed out with MEMBER_ID_REQUIRED
		// (KIP-394), each expiring after its session timeout.
		pending map[string]*time.Timer
		// pendingSync are the members of this generation that have not
		// sent SyncGroup yet.
		pendingSync map[string]bool
		offsets     map[TopicPartition]CommittedOffset
		// pendingTxn are offsets committed in open transactions, by
		// producer id (txn_offsets.go): invisible until the commit
		// marker, dropped on abort.
		pendingTxn map[int64]map[TopicPartition]pendingOffset

		// phase times the current rebalance phase: the initial delay,
		// the rebalance timeout, or the wait for SyncGroup.
		phase        *time.Timer
		phaseSeq     uint64
		initialDelay bool // the phase is group.initial.rebalance.delay.ms
		// delayRemaining and newMemberAdded drive the extension of the
		// initial delay while members keep arriving.
		delayRemaining time.Duration
		newMemberAdded bool

		// consumer is set when the group uses the KIP-848 consumer
		// protocol (consumer_group.go); the classic fields above
		// then hold no members.
		consumer *consumerGroup
	}
}

func (c *Coordinator) newGroup(id string, partition int32) *Group {
	g := &Group{id: id, partition: partition, c: c}
	g.mu.members = make(map[string]*member)
	g.mu.static = make(map[string]string)
	g.mu.pending = make(map[string]*time.Timer)
	g.mu.pendingSync = make(map[string]bool)
	g.mu.offsets = make(map[TopicPartition]CommittedOffset)
	g.mu.stateTime = c.now().UnixMilli()
	return g
}

// restoreLocked sets the group from its last GroupMetadataValue: Stable
// with its members when it had any, Empty otherwise.
func (g *Group) restoreLocked(v *kmsg.GroupMetadataValue) {
	g.mu.protocolType = v.ProtocolType
	g.mu.generation = v.Generation
	if v.Protocol != nil {
		g.mu.protocolName = *v.Protocol
	}
	if v.Leader != nil {
		g.mu.leader = *v.Leader
	}
	if v.Version >= 2 && v.CurrentStateTimestamp > 0 {
		g.mu.stateTime = v.CurrentStateTimestamp
	}
	for _, vm := range v.Members {
		m := &member{
			id:               vm.MemberID,
			instanceID:       vm.InstanceID,
			clientID:         vm.ClientID,
			clientHost:       vm.ClientHost,
			sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
			protocolType:     v.ProtocolType,
			protocols:        []Protocol{{Name: g.mu.protocolName, Metadata: bytes.Clone(vm.Subscription)}},
			assignment:       bytes.Clone(vm.Assignment),
		}
		if v.Version < 1 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		g.addMemberLocked(m)
	}
	if len(g.mu.members) > 0 {
		g.mu.state = StateStable
	} else {
		g.mu.state = StateEmpty
		g.mu.leader = ""
	}
}

// afterLoadLocked starts the sessions of a loaded group's members: a
// member that does not heartbeat to its new coordinator in time leaves.
func (g *Group) afterLoadLocked() {
	if g.mu.consumer != nil {
		g.afterConsumerLoadLocked()
	}
	for _, m := range g.mu.members {
		g.scheduleSessionLocked(m)
	}
}

// shutdownLocked marks the group Dead, stops its timers and answers its
// parked requests with err.
func (g *Group) shutdownLocked(err error) {
	g.mu.state = StateDead
	g.stopPhaseLocked()
	for _, t := range g.mu.pending {
		t.Stop()
	}
	if g.mu.consumer != nil {
		for _, m := range g.mu.consumer.members {
			stopMemberTimers(m)
		}
	}
	for _, m := range g.mu.members {
		if m.session != nil {
			m.session.Stop()
		}
		if m.joinCh != nil {
			m.joinCh <- JoinResult{Err: err, MemberID: m.id, Generation: -1}
			m.joinCh = nil
		}
		if m.syncCh != nil {
			m.syncCh <- SyncResult{Err: err}
			m.syncCh = nil
		}
	}
}

func (g *Group) transitionLocked(s State) {
	g.mu.state = s
	g.mu.stateTime = g.c.now().UnixMilli()
}

func (g *Group) addMemberLocked(m *member) {
	if len(g.mu.members) == 0 && g.mu.protocolType == "" {
		g.mu.protocolType = m.protocolType
	}
	if g.mu.leader == "" {
		g.mu.leader = m.id
	}
	g.mu.members[m.id] = m
	g.mu.order = append(g.mu.order, m.id)
	if m.instanceID != nil {
		g.mu.static[*m.instanceID] = m.id
	}
}

// removeMemberLocked takes m out of the group, answering its parked
// requests with UNKNOWN_MEMBER_ID; it does not rebalance.
func (g *Group) removeMemberLocked(m *member) {
	delete(g.mu.members, m.id)
	g.mu.order = slices.DeleteFunc(g.mu.order, func(id string) bool { return id == m.id })
	if m.instanceID != nil && g.mu.static[*m.instanceID] == m.id {
		delete(g.mu.static, *m.instanceID)
	}
	delete(g.mu.pendingSync, m.id)
	if m.session != nil {
		m.session.Stop()
	}
	m.sessionSeq++
	if m.joinCh != nil {
		m.joinCh <- JoinResult{Err: kerr.UnknownMemberID, MemberID: m.id, Generation: -1}
		m.joinCh = nil
	}
	if m.syncCh != nil {
		m.syncCh <- SyncResult{Err: kerr.UnknownMemberID}
		m.syncCh = nil
	}
	if g.mu.leader == m.id {
		g.mu.leader = ""
		if len(g.mu.order) > 0 {
			g.mu.leader = g.mu.order[0]
		}
	}
}

// removeMemberAndUpdateLocked removes m and moves the group on: a stable
// group rebalances; a rebalancing one may now have everyone it waits for.
func (g *Group) removeMemberAndUpdateLocked(m *member, reason string) {
	g.removeMemberLocked(m)
	switch g.mu.state {
	case StateStable, StateCompletingRebalance:
		g.prepareRebalanceLocked(reason)
	case StatePreparingRebalance:
		g.tryCompleteJoinLocked()
	}
}

// validateMemberLocked is Kafka's ClassicGroup.validateMember: a static
// member must present the member id its instance id currently maps to
// (FENCED_INSTANCE_ID otherwise, KIP-345); the member must exist.
func (g *Group) validateMemberLocked(memberID string, instanceID *string) (*member, error) {
	if instanceID != nil {
		cur, ok := g.mu.static[*instanceID]
		if !ok {
			return nil, kerr.UnknownMemberID
		}
		if cur != memberID {
			return nil, kerr.FencedInstanceID
		}
	}
	m, ok := g.mu.members[memberID]
	if !ok {
		return nil, kerr.UnknownMemberID
	}
	return m, nil
}

// scheduleSessionLocked (re)starts m's session timer. A member parked in
// JoinGroup or SyncGroup is kept alive (Kafka's shouldKeepAlive): the
// rebalance and sync timeouts bound those waits instead.
func (g *Group) scheduleSessionLocked(m *member) {
	if m.session != nil {
		m.session.Stop()
	}
	m.sessionSeq++
	seq := m.sessionSeq
	m.session = time.AfterFunc(m.sessionTimeout, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.mu.state == StateDead || g.mu.members[m.id] != m || m.sessionSeq != seq {
			return
		}
		if m.joinCh != nil || m.syncCh != nil {
			g.scheduleSessionLocked(m)
			return
		}
		g.c.logger.Info("group member session expired", "group", g.id, "member", m.id)
		g.removeMemberAndUpdateLocked(m, "member "+m.id+" session expired")
	})
}

// schedulePhaseLocked starts the group's phase timer; a previous one is
// cancelled.
func (g *Group) schedulePhaseLocked(d time.Duration, fn func()) {
	g.stopPhaseLocked()
	seq := g.mu.phaseSeq
	g.mu.phase = time.AfterFunc(d, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.mu.state == StateDead || g.mu.phaseSeq != seq {
			return
		}
		g.mu.phase = nil
		fn()
	})
}

func (g *Group) stopPhaseLocked() {
	if g.mu.phase != nil {
		g.mu.phase.Stop()
		g.mu.phase = nil
	}
	g.mu.phaseSeq++
	g.mu.initialDelay = false
}

// rebalanceTimeoutLocked is the longest rebalance timeout of the members,
// which bounds how long the join phase waits.
func (g *Group) rebalanceTimeoutLocked() time.Duration {
	var d time.Duration
	for _, m := range g.mu.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// supportsProtocolsLocked is Kafka's supportsProtocols: the first member
// sets the protocol type; later ones must match it and share at least one
// protocol with every current member.
func (g *Group) supportsProtocolsLocked(protocolType string, protocols []Protocol) bool {
	if protocolType == "" || len(protocols) == 0 {
		return false
	}
	if len(g.mu.members) == 0 {
		return true
	}
	if protocolType != g.mu.protocolType {
		return false
	}
	for _, p := range protocols {
		if g.allSupportLocked(p.Name) {
			return true
		}
	}
	return false
}

func (g *Group) allSupportLocked(name string) bool {
	for _, m := range g.mu.members {
		if !slices.ContainsFunc(m.protocols, func(p Protocol) bool { return p.Name == name }) {
			return false
		}
	}
	return true
}

// selectProtocolLocked picks the generation's protocol as Kafka does: of
// the protocols every member supports, each member votes for the one it
// lists first; the most votes win (ties go to the protocol the leader
// prefers, for determinism).
func (g *Group) selectProtocolLocked() string {
	var candidates []string
	if lm := g.mu.members[g.mu.leader]; lm != nil {
		for _, p := range lm.protocols {
			if g.allSupportLocked(p.Name) {
				candidates = append(candidates, p.Name)
			}
		}
	}
	votes := map[string]int{}
	for _, m := range g.mu.members {
		for _, p := range m.protocols {
			if slices.Contains(candidates, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, c := range candidates {
		if best == "" || votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

// subscribedTopicsLocked is the union of the topics the members subscribe
// to, from their consumer-protocol metadata; ok is false when the group is
// not a consumer group or a member's metadata does not parse (then the
// group counts as subscribed to everything, as Kafka does).
func (g *Group) subscribedTopicsLocked() (map[string]bool, bool) {
	if cg := g.mu.consumer; cg != nil {
		topics := map[string]bool{}
		for name := range cg.subscription(g.c.topicsSnapshot(), nil, "") {
			topics[name] = true
		}
		for _, m := range cg.members {
			for _, t := range m.topics {
				topics[t] = true
			}
		}
		return topics, true
	}
	if g.mu.protocolType != "consumer" || g.mu.protocolName == "" {
		return nil, false
	}
	topics := map[string]bool{}
	for _, m := range g.mu.members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadataFor(g.mu.protocolName)); err != nil {
			return nil, false
		}
		for _, t := range md.Topics {
			topics[t] = true
		}
	}
	return topics, true
}

// metadataRecordLocked is the group's GroupMetadataValue record, with
// assignments overriding the members' current ones.
func (g *Group) metadataRecordLocked(assignments map[string][]byte) kv {
	v := kmsg.NewGroupMetadataValue()
	v.Version = 3
	v.ProtocolType = g.mu.protocolType
	v.Generation = g.mu.generation
	if g.mu.protocolName != "" {
		p := g.mu.protocolName
		v.Protocol = &p
	}
	if g.mu.leader != "" {
		l := g.mu.leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = g.mu.stateTime
	for _, id := range g.mu.order {
		m := g.mu.members[id]
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID = m.id
		vm.InstanceID = m.instanceID
		vm.ClientID = m.clientID
		vm.ClientHost = m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout / time.Millisecond)
		vm.SessionTimeoutMillis = int32(m.sessionTimeout / time.Millisecond)
		vm.Subscription = m.metadataFor(g.mu.protocolName)
		if vm.Subscription == nil {
			vm.Subscription = []byte{}
		}
		vm.Assignment = m.assignment
		if a, ok := assignments[m.id]; ok {
			vm.Assignment = a
		}
		if vm.Assignment == nil {
			vm.Assignment = []byte{}
		}
		v.Members = append(v.Members, vm)
	}
	return kv{key: groupMetadataKey(g.id), value: v.AppendTo(nil)}
}

// storeLocked persists the group's metadata record.
func (g *Group) storeLocked(assignments map[string][]byte) error {
	return g.c.appendRecords(g.partition, []kv{g.metadataRecordLocked(assignments)})
}
