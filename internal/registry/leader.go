package registry

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Leader election, as Confluent's registry nodes elect theirs: every node
// is a member of the Kafka consumer group schema-registry (protocol type
// "sr", protocol "v0"), its member metadata naming its URL; the group's
// leader picks the registry leader among the members and hands every
// member the same assignment, naming it. Writes (registrations, deletes,
// config and mode changes) run on the leader alone, the other nodes
// forwarding them (http.go), so ids and versions are allocated by one
// node at a time across the cluster. A node that loses its membership (a
// rebalance, the coordinator moving) knows no leader until it has joined
// again; its writes meanwhile wait for the election (leaderWait).

// Group names Confluent's registry uses (electionGroup is the default of
// schema.registry.group.id).
const (
	electionGroup        = "schema-registry"
	electionProtocolType = "sr"
	electionProtocol     = "v0"
)

// memberIdentity is a member's metadata and the leader's identity in an
// assignment (Confluent's SchemaRegistryIdentity, plus the URL).
type memberIdentity struct {
	Version           int    `json:"version"`
	URL               string `json:"url"`
	LeaderEligibility bool   `json:"leader_eligibility"`
}

// electionAssignment is what the group leader gives every member.
type electionAssignment struct {
	Version        int             `json:"version"`
	Error          int             `json:"error"`
	Master         string          `json:"master"`
	MasterIdentity *memberIdentity `json:"master_identity"`
}

// elector keeps this node's membership of the election group.
type elector struct {
	cl    *kgo.Client
	group string
	self  string // this node's URL
	log   *slog.Logger

	mu      sync.Mutex    // guards leader, isSelf and elected
	leader  string        // the leader's URL; "" while unknown
	isSelf  bool          // this node leads
	elected chan struct{} // closed when a leader becomes known, replaced when it is lost

	cancel context.CancelFunc
	done   chan struct{}
}

func newElector(cl *kgo.Client, group, self string, log *slog.Logger) *elector {
	if group == "" {
		group = electionGroup
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &elector{cl: cl, group: group, self: self, log: log, elected: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	go e.run(ctx)
	return e
}

// wait waits until a leader is known or ctx ends.
func (e *elector) wait(ctx context.Context) (string, bool) {
	for {
		e.mu.Lock()
		leader, self, ch := e.leader, e.isSelf, e.elected
		e.mu.Unlock()
		if leader != "" {
			return leader, self
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return "", false
		case <-e.done:
			return "", false
		}
	}
}

func (e *elector) set(leader string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if leader == e.leader {
		return
	}
	if leader != "" {
		close(e.elected)
		e.log.Info("schema registry leader elected", "leader", leader, "self", leader == e.self)
	} else {
		e.elected = make(chan struct{})
	}
	e.leader, e.isSelf = leader, leader != "" && leader == e.self
}

// close leaves the group and stops.
func (e *elector) close() {
	e.cancel()
	<-e.done
}

// run joins, syncs and heartbeats until ctx ends, joining again whenever
// the membership is lost.
func (e *elector) run(ctx context.Context) {
	defer close(e.done)
	memberID := ""
	backoff := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(250 * time.Millisecond):
			return true
		}
	}
	defer func() {
		if memberID == "" {
			return
		}
		lctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.Group, leave.MemberID = e.group, memberID
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = memberID
		leave.Members = append(leave.Members, m)
		_, _ = leave.RequestWith(lctx, e.cl) // best effort: the session timeout removes it otherwise
	}()
	meta, _ := json.Marshal(memberIdentity{Version: 1, URL: e.self, LeaderEligibility: true})
	for ctx.Err() == nil {
		gen, leader, err := e.join(ctx, &memberID, meta)
		if err != nil {
			e.set("")
			if ctx.Err() == nil {
				e.log.Debug("schema registry election", "err", err)
			}
			if !backoff() {
				return
			}
			continue
		}
		e.set(leader)
		e.heartbeat(ctx, memberID, gen)
		e.set("")
	}
}

// join joins the group and syncs, returning the generation and the
// leader's URL.
func (e *elector) join(ctx context.Context, memberID *string, meta []byte) (int32, string, error) {
	for {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = e.group, *memberID, electionProtocolType
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 10_000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = electionProtocol, meta
		req.Protocols = append(req.Protocols, p)
		resp, err := req.RequestWith(ctx, e.cl)
		if err != nil {
			return 0, "", err
		}
		switch err := kerr.ErrorForCode(resp.ErrorCode); {
		case errors.Is(err, kerr.MemberIDRequired):
			*memberID = resp.MemberID // KIP-394: join again with it
			continue
		case errors.Is(err, kerr.UnknownMemberID):
			*memberID = ""
			return 0, "", err
		case err != nil:
			return 0, "", err
		}
		*memberID = resp.MemberID
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.Generation, sync.MemberID = e.group, resp.Generation, resp.MemberID
		sync.ProtocolType, sync.Protocol = kmsg.StringPtr(electionProtocolType), kmsg.StringPtr(electionProtocol)
		if resp.LeaderID == resp.MemberID {
			sync.GroupAssignment = assignLeader(resp.Members)
		}
		sresp, err := sync.RequestWith(ctx, e.cl)
		if err != nil {
			return 0, "", err
		}
		if err := kerr.ErrorForCode(sresp.ErrorCode); err != nil {
			if errors.Is(err, kerr.UnknownMemberID) {
				*memberID = ""
			}
			return 0, "", err
		}
		var a electionAssignment
		if err := json.Unmarshal(sresp.MemberAssignment, &a); err != nil || a.Error != 0 || a.MasterIdentity == nil || a.MasterIdentity.URL == "" {
			return 0, "", errors.New("no eligible leader in the assignment")
		}
		return resp.Generation, a.MasterIdentity.URL, nil
	}
}

// assignLeader picks the registry leader among the members: the eligible
// one whose URL sorts first, so a stable set of nodes keeps its leader.
func assignLeader(members []kmsg.JoinGroupResponseMember) []kmsg.SyncGroupRequestGroupAssignment {
	type candidate struct {
		id string
		m  memberIdentity
	}
	var cands []candidate
	for _, m := range members {
		var id memberIdentity
		if json.Unmarshal(m.ProtocolMetadata, &id) == nil && id.LeaderEligibility && id.URL != "" {
			cands = append(cands, candidate{m.MemberID, id})
		}
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		if a.m.URL != b.m.URL {
			if a.m.URL < b.m.URL {
				return -1
			}
			return 1
		}
		if a.id < b.id {
			return -1
		}
		if a.id > b.id {
			return 1
		}
		return 0
	})
	a := electionAssignment{Version: 1}
	if len(cands) == 0 {
		a.Error = 1 // no eligible member
	} else {
		a.Master, a.MasterIdentity = cands[0].id, &cands[0].m
	}
	b, _ := json.Marshal(a)
	var out []kmsg.SyncGroupRequestGroupAssignment
	for _, m := range members {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = m.MemberID, b
		out = append(out, ga)
	}
	return out
}

// heartbeat keeps the membership of generation gen until a heartbeat
// fails (a rebalance, the coordinator moving) or ctx ends.
func (e *elector) heartbeat(ctx context.Context, memberID string, gen int32) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.Generation, req.MemberID = e.group, gen, memberID
		resp, err := req.RequestWith(ctx, e.cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			if ctx.Err() == nil {
				e.log.Debug("schema registry election: membership lost, joining again", "err", err)
			}
			return
		}
	}
}
