package group

// A model-based randomized test of the classic group protocol: random
// sequences of rebalances (every member and some new ones JoinGroup at
// once, KIP-394 member ids included, then the leader and the followers
// SyncGroup in random order), heartbeats (current and stale generations),
// commits, leaves, session timeouts and coordinator restarts, checked after
// every step against the state machine's rules:
//
//   - a completed join phase gives every joiner the same, larger,
//     generation and one leader, the only one to get the member list, which
//     is exactly the joiners;
//   - every member's SyncGroup returns what the leader assigned it;
//   - Stable: a heartbeat at the generation succeeds, an older one is
//     ILLEGAL_GENERATION; after a leave or a timeout the others are told
//     REBALANCE_IN_PROGRESS; a removed member is UNKNOWN_MEMBER_ID;
//   - a commit at the generation succeeds (also while preparing a
//     rebalance), at another is ILLEGAL_GENERATION, from a non-member
//     UNKNOWN_MEMBER_ID; the committed offsets are the model's;
//   - the group's state and members are the model's, and a reload gives
//     back the Stable group with its generation, members and assignments.
//
// The seed is printed; VLTAVA_MODEL_SEED reruns one.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

type classicModel struct {
	t       *testing.T
	rng     *rand.Rand
	log     *memLog
	c       *Coordinator
	group   string
	members map[string][]byte // member id -> its assignment
	removed []string
	gen     int32
	leader  string
	stable  bool // false while a rebalance is pending
	// committed is the last successful commit per partition.
	committed map[TopicPartition]int64
}

func (cm *classicModel) newCoordinator() *Coordinator {
	cfg := testConfig()
	cfg.MaxSize = 50
	c := newTestCoordinator(cm.t, cfg, cm.log, nil)
	c.setTopics(modelTopics)
	return c
}

func classicModelJoin(group, id string) JoinRequest {
	r := joinReq(group, id)
	r.SessionTimeout, r.RebalanceTimeout = 10*time.Second, 10*time.Second
	return r
}

// rebalance has every member and newMembers new ones join, then everyone
// sync. A stable group's rebalance is started first (by a new member, or
// by the leader rejoining) and the others join once it is preparing: a
// follower rejoining a Stable group with unchanged metadata is just given
// the current generation, as in Kafka. The first member of an empty group
// completes its join phase alone (no initial delay): the others follow in
// a second rebalance.
func (cm *classicModel) rebalance(newMembers int) {
	ctx := context.Background()
	if len(cm.members) == 0 {
		cm.joinAll(ctx, nil, 1, -1)
		if newMembers > 1 {
			cm.rebalance(newMembers - 1)
		}
		return
	}
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range cm.members {
			if !yield(id) {
				return
			}
		}
	})
	trigger := -1
	if cm.stable {
		trigger = slices.Index(ids, cm.leader)
		if newMembers > 0 {
			trigger = len(ids) // the first new member
		}
	}
	cm.joinAll(ctx, ids, newMembers, trigger)
}

// joinAll joins the known ids and n new members (trigger first, when set,
// until the group is preparing a rebalance), then checks and syncs.
func (cm *classicModel) joinAll(ctx context.Context, known []string, n, trigger int) {
	ids := slices.Clone(known)
	for range n {
		ids = append(ids, "")
	}
	results := make([]JoinResult, len(ids))
	var wg sync.WaitGroup
	join := func(i int) {
		id := ids[i]
		kip394 := id == "" && cm.rng.IntN(2) == 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := classicModelJoin(cm.group, id)
			req.RequireKnownMemberID = kip394
			r := cm.c.JoinGroup(ctx, req)
			if kip394 && isErr(r.Err, kerr.MemberIDRequired) {
				req.MemberID = r.MemberID
				r = cm.c.JoinGroup(ctx, req)
			}
			results[i] = r
		}()
	}
	if trigger >= 0 {
		join(trigger)
		waitFor(cm.t, func() bool {
			d, err := cm.c.DescribeGroup(cm.group)
			return err == nil && d.State != "Stable"
		})
	}
	// New members are in before the known ones rejoin: a join phase
	// ends once every known member has joined, and a member arriving
	// later starts the next one.
	for i := len(known); i < len(ids); i++ {
		if i != trigger {
			join(i)
		}
	}
	if n > 0 && len(known) > 0 {
		waitFor(cm.t, func() bool {
			d, err := cm.c.DescribeGroup(cm.group)
			return err == nil && len(d.Members) == len(ids)
		})
	}
	for i := range known {
		if i != trigger {
			join(i)
		}
	}
	wg.Wait()
	leader := ""
	joined := map[string]bool{}
	for _, r := range results {
		if r.Err != nil {
			cm.t.Fatalf("join: %v", r.Err)
		}
		if r.Generation <= cm.gen {
			cm.t.Fatalf("generation %d after %d", r.Generation, cm.gen)
		}
		if r.Generation != results[0].Generation || r.LeaderID != results[0].LeaderID {
			cm.t.Fatalf("joiners disagree: %+v / %+v", r, results[0])
		}
		joined[r.MemberID] = true
		if len(r.Members) > 0 {
			if leader != "" {
				cm.t.Fatalf("two leaders: %s and %s", leader, r.MemberID)
			}
			leader = r.MemberID
		}
	}
	if leader == "" || leader != results[0].LeaderID || len(joined) != len(ids) {
		cm.t.Fatalf("leader %q, results %+v", leader, results)
	}
	for _, r := range results {
		if r.MemberID == leader {
			if len(r.Members) != len(ids) {
				cm.t.Fatalf("the leader sees %d members, %d joined", len(r.Members), len(ids))
			}
			for _, m := range r.Members {
				if !joined[m.MemberID] {
					cm.t.Fatalf("the leader sees %s, which did not join", m.MemberID)
				}
			}
		}
	}
	cm.gen, cm.leader = results[0].Generation, leader
	cm.members = map[string][]byte{}
	assignments := map[string][]byte{}
	for id := range joined {
		a := []byte(fmt.Sprintf("%s@%d", id, cm.gen))
		assignments[id] = a
		cm.members[id] = a
	}
	syncs := make(map[string]SyncResult)
	var mu sync.Mutex
	for id := range joined {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := SyncRequest{GroupID: cm.group, MemberID: id, Generation: cm.gen}
			if id == leader {
				req.Assignments = assignments
			}
			s := cm.c.SyncGroup(ctx, req)
			mu.Lock()
			syncs[id] = s
			mu.Unlock()
		}()
	}
	wg.Wait()
	for id, s := range syncs {
		if s.Err != nil || string(s.Assignment) != string(assignments[id]) {
			cm.t.Fatalf("sync of %s: %v %q, want %q", id, s.Err, s.Assignment, assignments[id])
		}
	}
	cm.stable = true
}

func (cm *classicModel) anyMember() string {
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range cm.members {
			if !yield(id) {
				return
			}
		}
	})
	return ids[cm.rng.IntN(len(ids))]
}

func (cm *classicModel) heartbeat(id string, gen int32) {
	err := cm.c.Heartbeat(cm.group, id, nil, gen)
	var want *kerr.Error
	switch {
	case cm.members[id] == nil:
		want = kerr.UnknownMemberID
	case !cm.stable:
		want = kerr.RebalanceInProgress
	case gen != cm.gen:
		want = kerr.IllegalGeneration
	}
	if (want == nil && err != nil) || (want != nil && !isErr(err, want)) {
		cm.t.Fatalf("heartbeat of %s at %d (generation %d, stable %v): %v, want %v", id, gen, cm.gen, cm.stable, err, want)
	}
}

func (cm *classicModel) commit(id string, gen int32) {
	tp := TopicPartition{Topic: "a", Partition: cm.rng.Int32N(6)}
	off := cm.rng.Int64N(1000)
	err, errs := cm.c.CommitOffsets(context.Background(), CommitRequest{GroupID: cm.group, MemberID: id, Generation: gen,
		Offsets: []CommitOffset{{TopicPartition: tp, Offset: off, LeaderEpoch: -1, CommitTimestamp: -1}}})
	if err == nil {
		err = errs[0]
	}
	var want *kerr.Error
	switch {
	case cm.members[id] == nil:
		want = kerr.UnknownMemberID
	case gen != cm.gen:
		want = kerr.IllegalGeneration
	}
	if want == nil {
		if err != nil {
			cm.t.Fatalf("commit of %s at %d: %v", id, gen, err)
		}
		cm.committed[tp] = off
		return
	}
	if !isErr(err, want) {
		cm.t.Fatalf("commit of %s at %d (generation %d): %v, want %s", id, gen, cm.gen, err, want.Message)
	}
}

// remove takes id out: a leave, or its session expiring as its timer
// would.
func (cm *classicModel) remove(id string, timeout bool) {
	if timeout {
		g, err := cm.c.lockGroup(cm.group, false)
		if err != nil || g == nil {
			cm.t.Fatalf("timeout: %v", err)
		}
		m := g.mu.members[id]
		if m == nil {
			g.mu.Unlock()
			cm.t.Fatalf("timeout: %s is not a member", id)
		}
		g.removeMemberAndUpdateLocked(m, "session expired (model)")
		g.mu.Unlock()
	} else {
		if _, errs := cm.c.LeaveGroup(cm.group, []LeaveMember{{MemberID: id}}); errs[0] != nil {
			cm.t.Fatalf("leave of %s: %v", id, errs[0])
		}
	}
	delete(cm.members, id)
	cm.removed = append(cm.removed, id)
	cm.stable = false
}

func (cm *classicModel) check(step string) {
	cm.t.Helper()
	d, err := cm.c.DescribeGroup(cm.group)
	if err != nil {
		cm.t.Fatalf("after %s: describe: %v", step, err)
	}
	want := "Stable"
	if !cm.stable {
		want = "PreparingRebalance"
	}
	if d.State != want || len(d.Members) != len(cm.members) {
		cm.t.Fatalf("after %s: group %s with %d members, model %s with %d", step, d.State, len(d.Members), want, len(cm.members))
	}
	for _, m := range d.Members {
		a, ok := cm.members[m.MemberID]
		if !ok {
			cm.t.Fatalf("after %s: %s is a member, not in the model", step, m.MemberID)
		}
		if cm.stable && string(m.Assignment) != string(a) {
			cm.t.Fatalf("after %s: %s has assignment %q, model %q", step, m.MemberID, m.Assignment, a)
		}
	}
}

func (cm *classicModel) checkOffsets() {
	var tps []TopicPartition
	for tp := range cm.committed {
		tps = append(tps, tp)
	}
	got, err := cm.c.FetchOffsets(cm.group, tps)
	if err != nil {
		cm.t.Fatalf("fetch offsets: %v", err)
	}
	for _, f := range got {
		if f.Err != nil || f.Offset != cm.committed[f.TopicPartition] {
			cm.t.Fatalf("committed offset of %v: %d (%v), model %d", f.TopicPartition, f.Offset, f.Err, cm.committed[f.TopicPartition])
		}
	}
}

func (cm *classicModel) step() string {
	if !cm.stable && cm.rng.IntN(3) == 0 {
		n := cm.rng.IntN(2)
		cm.rebalance(n)
		return fmt.Sprintf("rebalance (+%d)", n)
	}
	switch k := cm.rng.IntN(100); {
	case k < 15:
		n := cm.rng.IntN(3)
		cm.rebalance(n)
		return fmt.Sprintf("rebalance (+%d)", n)
	case k < 35:
		id := cm.anyMember()
		cm.heartbeat(id, cm.gen)
		return "heartbeat " + id
	case k < 40:
		id := cm.anyMember()
		cm.heartbeat(id, cm.gen-1)
		return "stale heartbeat " + id
	case k < 45 && len(cm.removed) > 0:
		id := cm.removed[cm.rng.IntN(len(cm.removed))]
		cm.heartbeat(id, cm.gen)
		return "removed member heartbeat " + id
	case k < 65:
		id := cm.anyMember()
		gen := cm.gen
		if cm.rng.IntN(4) == 0 {
			gen--
		}
		cm.commit(id, gen)
		return fmt.Sprintf("commit %s at %d", id, gen)
	case k < 68 && len(cm.removed) > 0:
		id := cm.removed[cm.rng.IntN(len(cm.removed))]
		cm.commit(id, cm.gen)
		return "removed member commit " + id
	case k < 76 && len(cm.members) > 1:
		id := cm.anyMember()
		cm.remove(id, false)
		return "leave " + id
	case k < 84 && len(cm.members) > 1:
		id := cm.anyMember()
		cm.remove(id, true)
		return "timeout " + id
	case k < 88 && cm.stable:
		cm.c.Close()
		cm.c = cm.newCoordinator()
		cm.checkOffsets()
		return "restart"
	case k < 92 && cm.stable:
		// A stable member's SyncGroup is answered at once.
		id := cm.anyMember()
		s := cm.c.SyncGroup(context.Background(), SyncRequest{GroupID: cm.group, MemberID: id, Generation: cm.gen})
		if s.Err != nil || string(s.Assignment) != string(cm.members[id]) {
			cm.t.Fatalf("stable sync of %s: %v %q", id, s.Err, s.Assignment)
		}
		return "stable sync " + id
	}
	return "nothing"
}

func TestClassicGroupModel(t *testing.T) {
	seeds := modelSeeds(t, 8)
	for _, seed := range seeds {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Logf("seed %d (rerun with VLTAVA_MODEL_SEED=%d)", seed, seed)
			cm := &classicModel{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), log: newMemLog(),
				group: "classic-model", members: map[string][]byte{}, committed: map[TopicPartition]int64{}}
			cm.c = cm.newCoordinator()
			cm.rebalance(1 + cm.rng.IntN(3))
			for i := 0; i < 150; i++ {
				name := cm.step()
				cm.check(fmt.Sprintf("step %d (%s)", i, name))
			}
			cm.checkOffsets()
		})
	}
}
