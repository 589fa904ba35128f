package group

// A model-based randomized test of the group coordinator: random sequences
// of consumer-protocol joins, heartbeats (full and partial) and leaves,
// classic joins, syncs and heartbeats (classic members of a consumer
// group), offset commits (current and stale epochs), session timeouts and
// coordinator restarts (reload from the log), checked after every step
// against the rules of the state machine:
//
//   - no partition is owned by two live clients, and what a client owns the
//     coordinator still counts as that member's (assigned or being revoked);
//   - the group epoch never goes back, nor a member's epoch while it stays;
//   - a live client's commit at its epoch succeeds, an older epoch is
//     STALE_MEMBER_EPOCH (classic: ILLEGAL_GENERATION), a removed member's
//     commit is UNKNOWN_MEMBER_ID; committed offsets are what the model
//     says, before and after a reload;
//   - a removed member's heartbeat is UNKNOWN_MEMBER_ID;
//   - once the random steps end and every client keeps heartbeating, the
//     group becomes Stable with every subscribed partition owned once.
//
// The seed is printed; VLTAVA_MODEL_SEED reruns one.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// modelClient is one client as the model sees it.
type modelClient struct {
	id      string
	classic bool
	live    bool // in the group, as far as the client knows
	epoch   int32
	owned   assignment
	topics  []string
	// classic: joined is set between a JoinGroup and its SyncGroup.
	joined bool
}

type groupModel struct {
	t       *testing.T
	rng     *rand.Rand
	log     *memLog
	c       *Coordinator
	group   string
	clients []*modelClient
	// committed is the last successful commit per partition.
	committed  map[TopicPartition]int64
	groupEpoch int32
	nextID     int
}

var modelTopics = map[string]topicMeta{
	"a": {name: "a", id: topicA, partitions: 6},
	"b": {name: "b", id: topicB, partitions: 3},
}

func (gm *groupModel) newCoordinator() *Coordinator {
	cfg := testConfig()
	// Timers never fire during a run: timeouts are steps of the model.
	cfg.ConsumerSessionTimeout = time.Hour
	cfg.ConsumerHeartbeatInterval = time.Second
	cfg.ConsumerMaxSize = 100
	cfg.MaxSessionTimeout = time.Hour
	// Upgrade only: a group left with classic members stays a consumer
	// group, whose classic joins are answered at once.
	cfg.MigrationPolicy = MigrationUpgrade
	c := newTestCoordinator(gm.t, cfg, gm.log, nil)
	c.setTopics(modelTopics)
	return c
}

func (gm *groupModel) fatalf(format string, args ...any) {
	gm.t.Helper()
	gm.t.Fatalf(format, args...)
}

// consumerMembers counts the coordinator's members (0 without a group).
func (gm *groupModel) members() map[string]*consumerMember {
	g, err := gm.c.lockGroup(gm.group, false)
	if err != nil {
		gm.fatalf("lookup: %v", err)
	}
	if g == nil {
		return nil
	}
	defer g.mu.Unlock()
	if g.mu.consumer == nil {
		if len(g.mu.members) > 0 {
			gm.fatalf("the group became classic with members")
		}
		return nil
	}
	out := map[string]*consumerMember{}
	for id, m := range g.mu.consumer.members {
		out[id] = m.cloneState()
	}
	return out
}

func (gm *groupModel) pick(pred func(*modelClient) bool) *modelClient {
	var cs []*modelClient
	for _, cl := range gm.clients {
		if pred(cl) {
			cs = append(cs, cl)
		}
	}
	if len(cs) == 0 {
		return nil
	}
	return cs[gm.rng.IntN(len(cs))]
}

func (gm *groupModel) randomTopics() []string {
	if gm.rng.IntN(3) == 0 {
		return []string{"a", "b"}
	}
	return []string{"a"}
}

// lost is a client out of the group: it owns nothing (it keeps its last
// epoch, which a removed member's heartbeat carries).
func (cl *modelClient) lost() {
	cl.live, cl.joined, cl.owned = false, false, assignment{}
}

// --- consumer-protocol steps ---

func (gm *groupModel) consumerJoin(cl *modelClient) {
	res := gm.c.ConsumerGroupHeartbeat(ConsumerHeartbeatRequest{Version: 1, GroupID: gm.group, MemberID: cl.id,
		RebalanceTimeoutMs: 60000, SubscribedTopicNames: cl.topics, Owned: []TopicPartitions{}})
	if res.Err != nil {
		gm.fatalf("consumer join %s: %v", cl.id, res.Err)
	}
	cl.live, cl.epoch, cl.owned = true, res.MemberEpoch, ownedAssignment(res.Assignment)
}

func (gm *groupModel) consumerHeartbeat(cl *modelClient, full bool) {
	req := ConsumerHeartbeatRequest{Version: 1, GroupID: gm.group, MemberID: cl.id, MemberEpoch: cl.epoch, RebalanceTimeoutMs: -1}
	if full {
		req.Owned = assignmentList(cl.owned)
	}
	res := gm.c.ConsumerGroupHeartbeat(req)
	switch {
	case res.Err == nil:
	case !cl.live && isErr(res.Err, kerr.UnknownMemberID):
		return
	case cl.live && (isErr(res.Err, kerr.UnknownMemberID) || isErr(res.Err, kerr.FencedMemberEpoch)):
		gm.fatalf("live member %s fenced: %v", cl.id, res.Err)
	default:
		gm.fatalf("heartbeat %s (live %v): %v", cl.id, cl.live, res.Err)
	}
	if !cl.live {
		gm.fatalf("removed member %s heartbeat succeeded", cl.id)
	}
	if res.MemberEpoch < cl.epoch {
		gm.fatalf("member %s epoch went back from %d to %d", cl.id, cl.epoch, res.MemberEpoch)
	}
	cl.epoch = res.MemberEpoch
	if res.HasAssignment {
		// The client revokes what is gone at once and takes what is new.
		cl.owned = ownedAssignment(res.Assignment)
	}
}

func (gm *groupModel) consumerLeave(cl *modelClient) {
	res := gm.c.ConsumerGroupHeartbeat(ConsumerHeartbeatRequest{Version: 1, GroupID: gm.group, MemberID: cl.id, MemberEpoch: leaveEpoch})
	if res.Err != nil {
		gm.fatalf("leave %s: %v", cl.id, res.Err)
	}
	cl.lost()
}

// --- classic steps ---

func (gm *groupModel) classicJoin(cl *modelClient) {
	named := map[string][]int32{}
	names := map[[16]byte]string{}
	for n, tm := range modelTopics {
		names[tm.id] = n
	}
	for id, ps := range cl.owned {
		named[names[id]] = slices.Clone(ps)
	}
	req := joinReq(gm.group, cl.id)
	req.SessionTimeout, req.RebalanceTimeout = time.Hour, time.Minute
	req.Protocols = []Protocol{{Name: "cooperative-sticky", Metadata: subscriptionMeta(cl.topics, named)}}
	r := gm.c.JoinGroup(context.Background(), req)
	if r.Err != nil {
		gm.fatalf("classic join %s: %v", cl.id, r.Err)
	}
	if cl.live && r.Generation < cl.epoch {
		gm.fatalf("classic member %s generation went back from %d to %d", cl.id, cl.epoch, r.Generation)
	}
	cl.id, cl.live, cl.joined, cl.epoch = r.MemberID, true, true, r.Generation
}

func (gm *groupModel) classicSync(cl *modelClient) {
	s := gm.c.SyncGroup(context.Background(), SyncRequest{GroupID: gm.group, MemberID: cl.id, Generation: cl.epoch})
	switch {
	case s.Err == nil:
	case isErr(s.Err, kerr.RebalanceInProgress):
		cl.joined = false // rejoin first
		return
	default:
		gm.fatalf("classic sync %s: %v", cl.id, s.Err)
	}
	cl.joined = false
	got := decodeAssignment(gm.t, s.Assignment)
	cl.owned = namedToAssignment(modelTopics, got)
}

func (gm *groupModel) classicHeartbeat(cl *modelClient) {
	err := gm.c.Heartbeat(gm.group, cl.id, nil, cl.epoch)
	switch {
	case err == nil, isErr(err, kerr.RebalanceInProgress):
	case !cl.live && isErr(err, kerr.UnknownMemberID):
	default:
		gm.fatalf("classic heartbeat %s (live %v): %v", cl.id, cl.live, err)
	}
	if !cl.live && err == nil {
		gm.fatalf("removed classic member %s heartbeat succeeded", cl.id)
	}
}

func (gm *groupModel) classicLeave(cl *modelClient) {
	_, errs := gm.c.LeaveGroup(gm.group, []LeaveMember{{MemberID: cl.id}})
	if errs[0] != nil {
		gm.fatalf("classic leave %s: %v", cl.id, errs[0])
	}
	cl.lost()
}

// --- shared steps ---

// timeout expires cl's session as its timer would.
func (gm *groupModel) timeout(cl *modelClient) {
	g, err := gm.c.lockGroup(gm.group, false)
	if err != nil || g == nil {
		gm.fatalf("timeout: group %v", err)
	}
	m := g.mu.consumer.members[cl.id]
	if m == nil {
		g.mu.Unlock()
		gm.fatalf("timeout: %s is not a member", cl.id)
	}
	if err := g.fenceConsumerMemberLocked(m, "session expired (model)"); err != nil {
		g.mu.Unlock()
		gm.fatalf("fence: %v", err)
	}
	g.mu.Unlock()
	// The client does not know yet: it is a zombie until it hears.
	cl.live, cl.owned = false, assignment{}
}

func (gm *groupModel) commit(cl *modelClient, stale bool) {
	var tp TopicPartition
	names := map[[16]byte]string{}
	for n, tm := range modelTopics {
		names[tm.id] = n
	}
	for id, ps := range cl.owned {
		tp = TopicPartition{Topic: names[id], Partition: ps[gm.rng.IntN(len(ps))]}
		break
	}
	if tp.Topic == "" {
		tp = TopicPartition{Topic: "a", Partition: 0}
	}
	epoch := cl.epoch
	if stale {
		epoch--
	}
	off := gm.rng.Int64N(1000)
	err, errs := gm.c.CommitOffsets(context.Background(), CommitRequest{GroupID: gm.group, MemberID: cl.id, Generation: epoch,
		GroupIDNotFoundForUnknown: true,
		Offsets:                   []CommitOffset{{TopicPartition: tp, Offset: off, LeaderEpoch: -1, CommitTimestamp: -1}}})
	if err == nil {
		err = errs[0]
	}
	var want *kerr.Error
	switch {
	case !cl.live:
		want = kerr.UnknownMemberID
	case stale && cl.classic:
		want = kerr.IllegalGeneration
	case stale:
		want = kerr.StaleMemberEpoch
	}
	if want == nil {
		if err != nil {
			gm.fatalf("commit by %s at its epoch %d: %v", cl.id, epoch, err)
		}
		gm.committed[tp] = off
		return
	}
	if !isErr(err, want) {
		gm.fatalf("commit by %s (live %v, stale %v): %v, want %s", cl.id, cl.live, stale, err, want.Message)
	}
}

// restart reloads the coordinator from the log: the group must be what it
// was.
func (gm *groupModel) restart() {
	before := gm.describe()
	gm.c.Close()
	gm.c = gm.newCoordinator()
	after := gm.describe()
	if fmt.Sprint(before) != fmt.Sprint(after) {
		gm.fatalf("reload changed the group:\n%v\n%v", before, after)
	}
	gm.checkOffsets()
}

func (gm *groupModel) describe() string {
	d, err := gm.c.DescribeConsumerGroup(gm.group)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%+v", d)
}

func (gm *groupModel) checkOffsets() {
	var tps []TopicPartition
	for tp := range gm.committed {
		tps = append(tps, tp)
	}
	got, err := gm.c.FetchOffsets(gm.group, tps)
	if err != nil {
		gm.fatalf("fetch offsets: %v", err)
	}
	for _, f := range got {
		if f.Err != nil || f.Offset != gm.committed[f.TopicPartition] {
			gm.fatalf("committed offset of %v: %d (%v), model %d", f.TopicPartition, f.Offset, f.Err, gm.committed[f.TopicPartition])
		}
	}
}

// check asserts the invariants after a step.
func (gm *groupModel) check(step string) {
	gm.t.Helper()
	members := gm.members()
	owner := map[partitionRef]string{}
	for _, cl := range gm.clients {
		if !cl.live {
			continue
		}
		m := members[cl.id]
		if m == nil {
			gm.fatalf("after %s: live client %s is not a member", step, cl.id)
		}
		for id, ps := range cl.owned {
			for _, p := range ps {
				ref := partitionRef{id, p}
				if o, ok := owner[ref]; ok {
					gm.fatalf("after %s: partition %v-%d owned by %s and %s", step, id, p, o, cl.id)
				}
				owner[ref] = cl.id
				if !m.assigned.has(id, p) && !m.revoking.has(id, p) {
					gm.fatalf("after %s: %s owns %v-%d, which the coordinator does not count as its", step, cl.id, id, p)
				}
			}
		}
	}
	if g, _ := gm.c.lockGroup(gm.group, false); g != nil {
		epoch := int32(0)
		if g.mu.consumer != nil {
			epoch = g.mu.consumer.epoch
		}
		g.mu.Unlock()
		if epoch < gm.groupEpoch {
			gm.fatalf("after %s: group epoch went back from %d to %d", step, gm.groupEpoch, epoch)
		}
		gm.groupEpoch = epoch
	}
}

func (gm *groupModel) liveCount() int {
	n := 0
	for _, cl := range gm.clients {
		if cl.live {
			n++
		}
	}
	return n
}

// step runs one random step and returns its name.
func (gm *groupModel) step() string {
	live := func(classic bool) func(*modelClient) bool {
		return func(cl *modelClient) bool { return cl.live && cl.classic == classic }
	}
	switch k := gm.rng.IntN(100); {
	case k < 8 || len(gm.clients) == 0:
		gm.nextID++
		cl := &modelClient{id: "m" + strconv.Itoa(gm.nextID), topics: gm.randomTopics(), owned: assignment{}}
		gm.clients = append(gm.clients, cl)
		gm.consumerJoin(cl)
		return "consumer join " + cl.id
	case k < 14 && gm.liveCount() > 0:
		// A classic member joins a consumer group in use.
		gm.nextID++
		cl := &modelClient{id: "c" + strconv.Itoa(gm.nextID), classic: true, topics: gm.randomTopics(), owned: assignment{}}
		gm.clients = append(gm.clients, cl)
		gm.classicJoin(cl)
		return "classic join " + cl.id
	case k < 40:
		if cl := gm.pick(live(false)); cl != nil {
			gm.consumerHeartbeat(cl, gm.rng.IntN(4) != 0)
			return "consumer heartbeat " + cl.id
		}
	case k < 50:
		if cl := gm.pick(live(true)); cl != nil {
			if cl.joined {
				gm.classicSync(cl)
				return "classic sync " + cl.id
			}
			gm.classicJoin(cl)
			return "classic rejoin " + cl.id
		}
	case k < 55:
		if cl := gm.pick(live(true)); cl != nil {
			gm.classicHeartbeat(cl)
			return "classic heartbeat " + cl.id
		}
	case k < 60:
		if cl := gm.pick(func(cl *modelClient) bool { return !cl.live && cl.id != "" }); cl != nil {
			if cl.classic {
				gm.classicHeartbeat(cl)
			} else {
				gm.consumerHeartbeat(cl, true)
			}
			return "removed member heartbeat " + cl.id
		}
	case k < 64:
		if cl := gm.pick(func(cl *modelClient) bool { return cl.live }); cl != nil && gm.liveCount() > 1 {
			if cl.classic {
				gm.classicLeave(cl)
			} else {
				gm.consumerLeave(cl)
			}
			return "leave " + cl.id
		}
	case k < 68:
		if cl := gm.pick(func(cl *modelClient) bool { return cl.live }); cl != nil && gm.liveCount() > 1 {
			gm.timeout(cl)
			return "timeout " + cl.id
		}
	case k < 70:
		if cl := gm.pick(func(cl *modelClient) bool { return !cl.live && !cl.classic }); cl != nil {
			gm.consumerJoin(cl)
			return "consumer rejoin " + cl.id
		}
	case k < 85:
		if cl := gm.pick(func(cl *modelClient) bool { return cl.id != "" }); cl != nil {
			stale := cl.live && gm.rng.IntN(5) == 0 && cl.epoch > 1
			gm.commit(cl, stale)
			return fmt.Sprintf("commit %s (stale %v)", cl.id, stale)
		}
	case k < 87:
		gm.restart()
		return "restart"
	}
	return "nothing"
}

// settle drives every live client until the group is Stable and every
// subscribed partition is owned once.
func (gm *groupModel) settle() {
	for round := 0; round < 30; round++ {
		for _, cl := range gm.clients {
			switch {
			case !cl.live:
			case cl.classic:
				gm.classicJoin(cl)
				gm.classicSync(cl)
			default:
				gm.consumerHeartbeat(cl, true)
			}
			gm.check("settling")
		}
		d, err := gm.c.DescribeConsumerGroup(gm.group)
		if err != nil || d.State != "Stable" {
			continue
		}
		subscribed := map[string]bool{}
		for _, cl := range gm.clients {
			if cl.live {
				for _, t := range cl.topics {
					subscribed[t] = true
				}
			}
		}
		owned := 0
		for _, cl := range gm.clients {
			if cl.live {
				owned += cl.owned.size()
			}
		}
		want := 0
		for t := range subscribed {
			want += int(modelTopics[t].partitions)
		}
		if owned == want {
			return
		}
	}
	gm.fatalf("not settled: %s", gm.describe())
}

// modelSeeds are the seeds a model test runs: VLTAVA_MODEL_SEED alone when
// set (to replay a failure), else n seeds from the clock.
func modelSeeds(t *testing.T, n int) []uint64 {
	t.Helper()
	if s := os.Getenv("VLTAVA_MODEL_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("VLTAVA_MODEL_SEED: %v", err)
		}
		return []uint64{v}
	}
	base := uint64(time.Now().UnixNano())
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = base + uint64(i)
	}
	return seeds
}

func TestGroupCoordinatorModel(t *testing.T) {
	seeds := modelSeeds(t, 12)
	for _, seed := range seeds {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Logf("seed %d (rerun with VLTAVA_MODEL_SEED=%d)", seed, seed)
			gm := &groupModel{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), log: newMemLog(),
				group: "model", committed: map[TopicPartition]int64{}}
			gm.c = gm.newCoordinator()
			for i := 0; i < 300; i++ {
				name := gm.step()
				gm.check(fmt.Sprintf("step %d (%s)", i, name))
			}
			gm.settle()
			gm.checkOffsets()
			gm.restart()
		})
	}
}
