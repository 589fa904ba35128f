package compat

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupBrokerOptions make group tests fast: no initial rebalance delay and
// short sessions allowed.
var groupBrokerOptions = []Option{
	WithOverride("group.initial.rebalance.delay.ms", "0"),
	WithOverride("group.min.session.timeout.ms", "1000"),
	// KIP-848 members may heartbeat fast and have short sessions.
	WithOverride("group.consumer.min.heartbeat.interval.ms", "100"),
	WithOverride("group.consumer.min.session.timeout.ms", "3000"),
	WithOverride("offsets.topic.num.partitions", "4"),
}

// groupMember starts a kgo consumer in group that polls in the background
// and records what it consumed, per partition.
type groupMember struct {
	cl   *kgo.Client
	mu   sync.Mutex
	recs []*kgo.Record
	done chan struct{}
}

func startGroupMember(t *testing.T, b *Broker, group, topic string, opts ...kgo.Opt) *groupMember {
	t.Helper()
	base := []kgo.Opt{
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.RebalanceTimeout(10 * time.Second),
		kgo.AutoCommitInterval(200 * time.Millisecond),
	}
	m := &groupMember{cl: newClient(t, b, append(base, opts...)...), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			fs := m.cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			m.mu.Lock()
			m.recs = append(m.recs, fs.Records()...)
			m.mu.Unlock()
		}
	}()
	return m
}

func (m *groupMember) records() []*kgo.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.recs)
}

func (m *groupMember) close() {
	m.cl.Close()
	<-m.done
}

// stableAssignment waits until group is Stable with n members whose
// assignments of topic are disjoint and cover all partitions, and returns
// them by member id.
func stableAssignment(t *testing.T, adm *kadm.Client, group, topic string, n, partitions int) map[string][]int32 {
	t.Helper()
	var out map[string][]int32
	eventually(t, 40*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ds, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return err
		}
		d := ds[group]
		if d.Err != nil {
			return d.Err
		}
		if d.State != "Stable" || len(d.Members) != n {
			return fmt.Errorf("group %s is %s with %d members, want Stable with %d", group, d.State, len(d.Members), n)
		}
		owner := map[int32]string{}
		out = map[string][]int32{}
		for _, m := range d.Members {
			ca, ok := m.Assigned.AsConsumer()
			if !ok {
				return fmt.Errorf("member %s has no consumer assignment", m.MemberID)
			}
			for _, tp := range ca.Topics {
				if tp.Topic != topic {
					return fmt.Errorf("member %s assigned unexpected topic %s", m.MemberID, tp.Topic)
				}
				for _, p := range tp.Partitions {
					if prev, dup := owner[p]; dup {
						return fmt.Errorf("partition %d owned by %s and %s", p, prev, m.MemberID)
					}
					owner[p] = m.MemberID
					out[m.MemberID] = append(out[m.MemberID], p)
				}
			}
		}
		if len(owner) != partitions {
			return fmt.Errorf("%d of %d partitions assigned: %v", len(owner), partitions, out)
		}
		return nil
	})
	return out
}

// TestGroupsBalancers runs three kgo members of one group with each of
// franz-go's balancers, eager and cooperative: once stable every partition
// is owned by exactly one member, and records produced then are consumed
// exactly once, by the partition's owner.
func TestGroupsBalancers(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, groupBrokerOptions...)
	adm := newAdmin(t, b)
	for _, bc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"roundrobin", kgo.RoundRobinBalancer()},
		{"sticky", kgo.StickyBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			topic := uniqueTopic(t)
			group := "g-" + topic
			const partitions, n = 6, 60
			createTopic(t, adm, topic, partitions, nil)
			var members []*groupMember
			for i := 0; i < 3; i++ {
				members = append(members, startGroupMember(t, b, group, topic, kgo.Balancers(bc.balancer)))
			}
			assigned := stableAssignment(t, adm, group, topic, 3, partitions)
			ownerOf := map[int32]string{}
			for m, ps := range assigned {
				for _, p := range ps {
					ownerOf[p] = m
				}
			}
			prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			var rs []*kgo.Record
			for i := 0; i < n; i++ {
				rs = append(rs, &kgo.Record{Partition: int32(i % partitions), Value: []byte(strconv.Itoa(i))})
			}
			produceSync(t, prod, rs...)
			eventually(t, 30*time.Second, func() error {
				total := 0
				for _, m := range members {
					total += len(m.records())
				}
				if total < n {
					return fmt.Errorf("consumed %d of %d", total, n)
				}
				return nil
			})
			seen := map[string]bool{}
			for _, m := range members {
				mid, _ := m.cl.GroupMetadata()
				for _, r := range m.records() {
					if seen[string(r.Value)] {
						t.Fatalf("record %s consumed twice", r.Value)
					}
					seen[string(r.Value)] = true
					if ownerOf[r.Partition] != mid {
						t.Errorf("record of partition %d consumed by %s, owner is %s", r.Partition, mid, ownerOf[r.Partition])
					}
				}
			}
			if len(seen) != n {
				t.Fatalf("consumed %d distinct records, want %d", len(seen), n)
			}
			// One member leaves; the other two take over all partitions.
			members[0].close()
			stableAssignment(t, adm, group, topic, 2, partitions)
			members[1].close()
			members[2].close()
		})
	}
}

// TestGroupsStaticMemberRestart: a static member (group.instance.id,
// KIP-345) that restarts within its session timeout takes its old place
// without a rebalance: the generation does not move and the other member
// keeps its partitions.
func TestGroupsStaticMemberRestart(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, groupBrokerOptions...)
	adm := newAdmin(t, b)
	topic := uniqueTopic(t)
	group := "g-" + topic
	createTopic(t, adm, topic, 4, nil)
	// An eager balancer: cooperative-sticky may legitimately follow a
	// generation with a second one, which would blur what is measured.
	static := func(id string) *groupMember {
		return startGroupMember(t, b, group, topic, kgo.InstanceID(id), kgo.SessionTimeout(20*time.Second), kgo.Balancers(kgo.RangeBalancer()))
	}
	a := static("static-a")
	other := static("static-b")
	before := stableAssignment(t, adm, group, topic, 2, 4)
	eventually(t, 20*time.Second, func() error {
		_, ga := a.cl.GroupMetadata()
		_, gb := other.cl.GroupMetadata()
		if ga != gb || ga <= 0 {
			return fmt.Errorf("members at generations %d and %d", ga, gb)
		}
		return nil
	})
	otherID, gen := other.cl.GroupMetadata()

	a.close() // a static member does not leave the group on close
	a2 := static("static-a")
	eventually(t, 20*time.Second, func() error {
		if id, g := a2.cl.GroupMetadata(); id == "" || g != gen {
			return fmt.Errorf("restarted member at generation %d (id %q), want %d", g, id, gen)
		}
		return nil
	})
	after := stableAssignment(t, adm, group, topic, 2, 4)
	if id, g := other.cl.GroupMetadata(); id != otherID || g != gen {
		t.Fatalf("other member moved from %s@%d to %s@%d", otherID, gen, id, g)
	}
	if !slices.Equal(before[otherID], after[otherID]) {
		t.Fatalf("other member's partitions changed from %v to %v", before[otherID], after[otherID])
	}
	a2.close()
	other.close()
}

// TestGroupsAdmin drives kadm: list, describe and delete groups; commit,
// fetch and delete offsets, with the errors Kafka gives.
func TestGroupsAdmin(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, groupBrokerOptions...)
	adm := newAdmin(t, b)
	ctx := testContext(t, 60*time.Second)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 3, nil)

	// A standalone commit creates an offsets-only group.
	standalone := "standalone-" + topic
	var commit kadm.Offsets
	for p := int32(0); p < 3; p++ {
		commit.Add(kadm.Offset{Topic: topic, Partition: p, At: int64(10 + p), LeaderEpoch: -1, Metadata: "m" + strconv.Itoa(int(p))})
	}
	resp, err := adm.CommitOffsets(ctx, standalone, commit)
	if err != nil || resp.Error() != nil {
		t.Fatalf("CommitOffsets: %v / %v", err, resp.Error())
	}
	fetched, err := adm.FetchOffsets(ctx, standalone)
	if err != nil || fetched.Error() != nil {
		t.Fatalf("FetchOffsets: %v / %v", err, fetched.Error())
	}
	for p := int32(0); p < 3; p++ {
		o, ok := fetched.Lookup(topic, p)
		if !ok || o.At != int64(10+p) || o.Metadata != "m"+strconv.Itoa(int(p)) {
			t.Fatalf("fetched %s/%d = %+v, want offset %d", topic, p, o, 10+p)
		}
	}

	// A live consumer group.
	live := "live-" + topic
	m := startGroupMember(t, b, live, topic)
	stableAssignment(t, adm, live, topic, 1, 3)

	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("ListGroups: %v", err)
	}
	groups := listed.Groups()
	sort.Strings(groups)
	if !slices.Contains(groups, standalone) || !slices.Contains(groups, live) {
		t.Fatalf("ListGroups = %v, want %s and %s", groups, standalone, live)
	}
	if lg := listed[live]; lg.State != "Stable" || lg.ProtocolType != "consumer" {
		t.Fatalf("listed %s as %+v", live, lg)
	}
	stable, err := adm.ListGroups(ctx, "Stable")
	if err != nil {
		t.Fatalf("ListGroups(Stable): %v", err)
	}
	if _, ok := stable[standalone]; ok {
		t.Fatalf("ListGroups(Stable) lists the empty group %s", standalone)
	}

	// Deleting offsets of a topic the live group consumes is refused;
	// deleting the live group too.
	del, err := adm.DeleteOffsets(ctx, live, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatalf("DeleteOffsets: %v", err)
	}
	if err := del[topic][0]; err != kerr.GroupSubscribedToTopic {
		t.Fatalf("DeleteOffsets of a subscribed topic: %v, want GROUP_SUBSCRIBED_TO_TOPIC", err)
	}
	dg, err := adm.DeleteGroups(ctx, live, "no-such-group-"+topic)
	if err != nil {
		t.Fatalf("DeleteGroups: %v", err)
	}
	if dg[live].Err != kerr.NonEmptyGroup || dg["no-such-group-"+topic].Err != kerr.GroupIDNotFound {
		t.Fatalf("DeleteGroups = %v / %v, want NON_EMPTY_GROUP / GROUP_ID_NOT_FOUND", dg[live].Err, dg["no-such-group-"+topic].Err)
	}

	// The standalone group's offsets can be deleted, then the group.
	del, err = adm.DeleteOffsets(ctx, standalone, kadm.TopicsSet{topic: {1: {}}})
	if err != nil || del[topic][1] != nil {
		t.Fatalf("DeleteOffsets: %v / %v", err, del[topic][1])
	}
	fetched, _ = adm.FetchOffsets(ctx, standalone)
	if _, ok := fetched.Lookup(topic, 1); ok {
		t.Fatalf("offset of partition 1 still there after DeleteOffsets")
	}
	dg, err = adm.DeleteGroups(ctx, standalone)
	if err != nil || dg[standalone].Err != nil {
		t.Fatalf("DeleteGroups(%s): %v / %v", standalone, err, dg[standalone].Err)
	}
	fetched, _ = adm.FetchOffsets(ctx, standalone)
	if len(fetched) != 0 {
		t.Fatalf("offsets remain after DeleteGroups: %v", fetched)
	}
	m.close()
	// After the member leaves, the live group is empty and deletable.
	eventually(t, 20*time.Second, func() error {
		dg, err := adm.DeleteGroups(ctx, live)
		if err != nil {
			return err
		}
		return dg[live].Err
	})
}
