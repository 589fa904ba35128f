package herder

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/connect/worker"
)

// member is the worker's membership of the Connect group, spoken with
// JoinGroup, SyncGroup, Heartbeat and LeaveGroup: protocol type connect,
// protocols by connect.protocol, Kafka's member metadata and assignment
// schemas (protocol.go). Its goroutine owns the fields below mu's.
type member struct {
	d   *Distributed
	cl  *kgo.Client
	asg assignor

	memberID string
	protocol string

	rejoin    chan struct{} // buffered 1
	inBalance atomic.Bool   // true from JoinGroup until the assignment is applied
	done      chan struct{}

	mu         sync.Mutex // guards leader, leaderURL, generation, current
	leader     bool
	leaderURL  string
	generation int32
	current    allocation // what this worker is assigned
}

func newMember(d *Distributed) *member {
	cfg := d.cfg
	opts := append(cfg.ClientOpts("connect-member", d.log), kgo.RequestTimeoutOverhead(cfg.RebalanceTimeout+10*time.Second))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		panic(err) // the same options built clients before
	}
	m := &member{d: d, cl: cl, asg: assignor{maxDelay: cfg.ScheduledRebalance}, rejoin: make(chan struct{}, 1), done: make(chan struct{}), current: allocation{}}
	m.inBalance.Store(true)
	return m
}

func (m *member) rebalancing() bool { return m.inBalance.Load() }

func (m *member) leaderInfo() (bool, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leader, m.leaderURL
}

func (m *member) generationNow() int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.generation
}

func (m *member) requestRejoin() {
	select {
	case m.rejoin <- struct{}{}:
	default:
	}
}

func (m *member) wait() { <-m.done }

// assignedSets is core.assigned: what this worker runs.
func (m *member) assignedSets() (map[string]bool, map[worker.TaskID]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	conns, tasks := map[string]bool{}, map[worker.TaskID]bool{}
	for c, ts := range m.current {
		for _, t := range ts {
			if t == connectorTask {
				conns[c] = true
			} else {
				tasks[worker.TaskID{Connector: c, Task: int(t)}] = true
			}
		}
	}
	return conns, tasks
}

func (m *member) run(ctx context.Context) {
	defer close(m.done)
	defer m.cl.Close()
	for ctx.Err() == nil {
		m.inBalance.Store(true)
		if err := m.joinAndSync(ctx); err != nil {
			if ctx.Err() == nil {
				m.d.log.Warn("connect group rebalance failed; retrying", "group", m.d.cfg.GroupID, "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		m.inBalance.Store(false)
		m.d.poke()
		m.heartbeat(ctx)
	}
	m.leave()
}

func (m *member) metadata(version int16) []byte {
	m.mu.Lock()
	alloc := allocation{}
	for c, ts := range m.current {
		alloc[c] = append([]int32(nil), ts...)
	}
	m.mu.Unlock()
	return memberMeta{version: version, url: m.d.cfg.URL(), configOffset: m.d.configs.Offset() - 1, allocation: alloc}.encode()
}

func (m *member) joinAndSync(ctx context.Context) error {
	cfg := m.d.cfg
	if m.protocol == "" || m.protocol == "default" {
		// Eager: everything is given up before joining.
		m.setCurrent(allocation{})
		m.applyLocal()
	}
	var join *kmsg.JoinGroupResponse
	for attempt := 0; ; attempt++ {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group = cfg.GroupID
		req.SessionTimeoutMillis = int32(cfg.SessionTimeout / time.Millisecond)
		req.RebalanceTimeoutMillis = int32(cfg.RebalanceTimeout / time.Millisecond)
		req.MemberID = m.memberID
		req.ProtocolType = protocolType
		for _, name := range protocolNames(cfg.Protocol) {
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name = name
			p.Metadata = m.metadata(protocolVersion(name))
			req.Protocols = append(req.Protocols, p)
		}
		resp, err := req.RequestWith(ctx, m.cl)
		if err != nil {
			return err
		}
		err = kerr.ErrorForCode(resp.ErrorCode)
		switch {
		case err == nil:
			join = resp
		case errors.Is(err, kerr.MemberIDRequired) && attempt < 3:
			m.memberID = resp.MemberID
			continue
		case errors.Is(err, kerr.UnknownMemberID) && attempt < 3:
			m.memberID = ""
			continue
		default:
			return err
		}
		break
	}
	m.memberID = join.MemberID
	if join.Protocol != nil {
		m.protocol = *join.Protocol
	}
	version := protocolVersion(m.protocol)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = cfg.GroupID, join.Generation, join.MemberID
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr(protocolType), join.Protocol
	if join.LeaderID == join.MemberID {
		asgs, err := m.assign(ctx, join, version)
		if err != nil {
			return err
		}
		for id, a := range asgs {
			ga := kmsg.NewSyncGroupRequestGroupAssignment()
			ga.MemberID, ga.MemberAssignment = id, a.encode()
			sync.GroupAssignment = append(sync.GroupAssignment, ga)
		}
	}
	sresp, err := sync.RequestWith(ctx, m.cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(sresp.ErrorCode); err != nil {
		if errors.Is(err, kerr.UnknownMemberID) {
			m.memberID = ""
		}
		return err
	}
	a, err := decodeAssignment(sresp.MemberAssignment)
	if err != nil {
		return err
	}
	if a.err == assignConfigMismatch {
		rctx, cancel := context.WithTimeout(ctx, cfg.RebalanceTimeout)
		_ = m.d.configs.ReadToEnd(rctx)
		cancel()
		return errors.New("the leader's config is ahead of this worker's; read it and rejoin")
	}
	rctx, cancel := context.WithTimeout(ctx, cfg.RebalanceTimeout)
	err = m.d.configs.ReadToEnd(rctx)
	if err == nil {
		err = m.d.offs.ReadToEnd(rctx)
	}
	cancel()
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.generation = join.Generation
	m.leader = a.leader == m.memberID
	m.leaderURL = a.leaderURL
	next := allocation{}
	if version >= 1 {
		for c, ts := range m.current {
			for _, t := range ts {
				if !a.revoked.has(c, t) {
					next.add(c, t)
				}
			}
		}
	}
	for c, ts := range a.assigned {
		for _, t := range ts {
			if !next.has(c, t) {
				next.add(c, t)
			}
		}
	}
	m.current = next
	m.mu.Unlock()
	m.d.log.Info("joined the connect group", "group", cfg.GroupID, "generation", join.Generation, "protocol", m.protocol,
		"leader", a.leaderURL, "assigned", next.size(), "revoked", a.revoked.size(), "delay_ms", a.delay)
	m.applyLocal()
	if a.revoked.size() > 0 {
		m.requestRejoin()
	}
	if a.delay > 0 {
		time.AfterFunc(time.Duration(a.delay)*time.Millisecond, m.requestRejoin)
	}
	if m.leader && m.protocol == "sessioned" {
		go func() {
			if err := m.d.writeSessionKey(ctx); err != nil && ctx.Err() == nil {
				m.d.log.Warn("writing the session key failed", "err", err)
			}
		}()
	}
	return nil
}

func (m *member) setCurrent(a allocation) {
	m.mu.Lock()
	m.current = a
	m.mu.Unlock()
}

// applyLocal makes the worker run the current assignment.
func (m *member) applyLocal() {
	m.d.opMu.Lock()
	defer m.d.opMu.Unlock()
	m.d.reconcile()
}

// assign is the leader's part: the assignment of every member.
func (m *member) assign(ctx context.Context, join *kmsg.JoinGroupResponse, version int16) (map[string]assignment, error) {
	rctx, cancel := context.WithTimeout(ctx, m.d.cfg.RebalanceTimeout)
	defer cancel()
	if err := m.d.configs.ReadToEnd(rctx); err != nil {
		return nil, err
	}
	m.d.mu.Lock()
	st := m.d.st.clone()
	m.d.mu.Unlock()
	metas := map[string]memberMeta{}
	ids := []string{}
	for _, mem := range join.Members {
		meta, err := decodeMemberMeta(mem.ProtocolMetadata)
		if err != nil {
			return nil, err
		}
		metas[mem.MemberID] = meta
		ids = append(ids, mem.MemberID)
	}
	sort.Strings(ids)
	offset := m.d.configs.Offset() - 1
	leaderURL := metas[join.MemberID].url
	out := map[string]assignment{}
	if version == 0 {
		alloc := m.asg.eager(ids, st)
		for _, id := range ids {
			out[id] = assignment{version: 0, leader: join.MemberID, leaderURL: leaderURL, configOffset: offset, assigned: alloc[id]}
		}
		return out, nil
	}
	members := map[string]allocation{}
	for _, id := range ids {
		a := metas[id].allocation
		if a == nil {
			a = allocation{}
		}
		members[id] = a
	}
	assigned, revoked, delay := m.asg.cooperative(time.Now(), members, st)
	for _, id := range ids {
		out[id] = assignment{version: version, leader: join.MemberID, leaderURL: leaderURL, configOffset: offset,
			assigned: assigned[id], revoked: revoked[id], delay: int32(delay / time.Millisecond)}
	}
	return out, nil
}

// heartbeat keeps the membership until a rebalance is needed.
func (m *member) heartbeat(ctx context.Context) {
	t := time.NewTicker(m.d.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.rejoin:
			return
		case <-t.C:
		}
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.Generation, req.MemberID = m.d.cfg.GroupID, m.generationNow(), m.memberID
		resp, err := req.RequestWith(ctx, m.cl)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			m.d.log.Warn("connect group heartbeat failed", "err", err)
			continue
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) {
				m.memberID = ""
				m.setCurrent(allocation{})
			}
			return
		}
	}
}

// leave leaves the group so that its work moves at once.
func (m *member) leave() {
	if m.memberID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = m.d.cfg.GroupID
	mem := kmsg.NewLeaveGroupRequestMember()
	mem.MemberID = m.memberID
	req.Members = append(req.Members, mem)
	req.MemberID = m.memberID
	_, _ = req.RequestWith(ctx, m.cl)
}
