package streams

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// taskBalancer is the group balancer of an App's stream threads: it
// assigns tasks, not partitions, so that partition p of every source topic
// of a sub-topology lands on one member (co-partitioning), keeps tasks on
// their owners (sticky), and moves a task in two rebalances (KIP-429
// cooperative protocol): first its owner revokes it, then the new owner
// gets it. Each member's application.server travels in its metadata and
// the assignment carries every member's tasks, for QueryMetadataForKey.
// With num.standby.replicas it also gives each task that many standby
// tasks, each on a member of another process than the active task's.
type taskBalancer struct {
	app *App
	th  *thread // the thread whose client this balancer serves
}

// memberInfo is a member's user data in its join metadata.
type memberInfo struct {
	Server  string `json:"server"`
	Process string `json:"process"`
}

// assignmentInfo is the user data of every assignment.
type assignmentInfo struct {
	// Hosts maps application.server to the tasks its threads hold.
	Hosts map[string][]string `json:"hosts"`
	// Partitions is each sub-topology's partition count.
	Partitions map[int]int32 `json:"partitions"`
	// StandbyHosts maps application.server to the standby tasks its
	// threads hold.
	StandbyHosts map[string][]string `json:"standby_hosts,omitempty"`
	// Standby lists the standby tasks of the member receiving this
	// assignment.
	Standby []string `json:"standby,omitempty"`
}

func (b taskBalancer) ProtocolName() string { return "vltava-streams" }
func (b taskBalancer) IsCooperative() bool  { return true }

func (b taskBalancer) JoinGroupMetadata(topics []string, current map[string][]int32, generation int32) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = 2
	m.Topics = topics
	m.UserData, _ = json.Marshal(memberInfo{Server: b.app.cfg.ApplicationServer, Process: b.app.processID})
	m.Generation = generation
	var names []string
	for t := range current {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic = t
		op.Partitions = current[t]
		m.OwnedPartitions = append(m.OwnedPartitions, op)
	}
	return m.AppendTo(nil)
}

func (b taskBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(assignment); err != nil {
		return nil, err
	}
	out := map[string][]int32{}
	for _, t := range a.Topics {
		out[t.Topic] = t.Partitions
	}
	var info assignmentInfo
	if len(a.UserData) > 0 && json.Unmarshal(a.UserData, &info) == nil {
		var standby []TaskID
		for _, s := range info.Standby {
			var id TaskID
			if _, err := fmt.Sscanf(s, "%d_%d", &id.Subtopology, &id.Partition); err == nil {
				standby = append(standby, id)
			}
		}
		info.Standby = nil
		b.app.setAssignmentInfo(&info)
		if b.th != nil {
			b.th.setStandby(standby)
		}
	}
	return out, nil
}

type memberMeta struct {
	id      string
	server  string
	process string
	owned   map[TaskID]bool
}

func (b taskBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	topics := map[string]struct{}{}
	var ms []*memberMeta
	for _, m := range members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.ProtocolMetadata); err != nil {
			return nil, nil, err
		}
		var mi memberInfo
		if json.Unmarshal(meta.UserData, &mi) != nil {
			return nil, nil, fmt.Errorf("streams: member %s: user data is not a streams member's", m.MemberID)
		}
		mm := &memberMeta{id: m.MemberID, server: mi.Server, process: mi.Process, owned: map[TaskID]bool{}}
		for _, t := range meta.Topics {
			topics[t] = struct{}{}
		}
		for _, op := range meta.OwnedPartitions {
			if sub, ok := b.app.topicSub[op.Topic]; ok {
				for _, p := range op.Partitions {
					mm.owned[TaskID{Subtopology: sub, Partition: p}] = true
				}
			}
		}
		ms = append(ms, mm)
	}
	return &taskBalance{b: b, members: ms}, topics, nil
}

type taskBalance struct {
	b       taskBalancer
	members []*memberMeta
}

type syncPlan []kmsg.SyncGroupRequestGroupAssignment

func (p syncPlan) IntoSyncAssignment() []kmsg.SyncGroupRequestGroupAssignment { return p }

func (tb *taskBalance) Balance(topics map[string]int32) kgo.IntoSyncAssignment {
	app := tb.b.app
	var tasks []TaskID
	for _, st := range app.topo.subs {
		n := app.subPartitions[st.id]
		for p := int32(0); p < n; p++ {
			tasks = append(tasks, TaskID{Subtopology: st.id, Partition: p})
		}
	}
	ms := tb.members
	owner := map[TaskID]*memberMeta{}
	for _, m := range ms {
		for id := range m.owned {
			owner[id] = m
		}
	}
	// Capacities: base each, one more for the members that already hold
	// the most (so fewer tasks move).
	sort.Slice(ms, func(i, j int) bool {
		if len(ms[i].owned) != len(ms[j].owned) {
			return len(ms[i].owned) > len(ms[j].owned)
		}
		return ms[i].id < ms[j].id
	})
	base, extra := len(tasks)/len(ms), len(tasks)%len(ms)
	capOf := map[*memberMeta]int{}
	for i, m := range ms {
		capOf[m] = base
		if i < extra {
			capOf[m]++
		}
	}
	target := map[TaskID]*memberMeta{}
	load := map[*memberMeta]int{}
	for _, id := range tasks {
		if o := owner[id]; o != nil && load[o] < capOf[o] {
			target[id] = o
			load[o]++
		}
	}
	for _, id := range tasks {
		if target[id] != nil {
			continue
		}
		var best *memberMeta
		for _, m := range ms {
			if load[m] < capOf[m] && (best == nil || load[m] < load[best]) {
				best = m
			}
		}
		target[id] = best
		load[best]++
	}
	assigned := map[*memberMeta][]TaskID{}
	info := assignmentInfo{Hosts: map[string][]string{}, Partitions: app.subPartitions}
	for _, id := range tasks {
		t := target[id]
		holder := t
		// Cooperative: a task still owned elsewhere is withheld this round;
		// its owner revokes it and rejoins, and the next round gives it.
		if o := owner[id]; o != nil && o != t {
			holder = o
		} else {
			assigned[t] = append(assigned[t], id)
		}
		if holder.server != "" {
			info.Hosts[holder.server] = append(info.Hosts[holder.server], id.String())
		}
	}
	standby := tb.standbys(tasks, target, owner, app.cfg.NumStandbyReplicas)
	for m, ids := range standby {
		if m.server != "" {
			if info.StandbyHosts == nil {
				info.StandbyHosts = map[string][]string{}
			}
			for _, id := range ids {
				info.StandbyHosts[m.server] = append(info.StandbyHosts[m.server], id.String())
			}
		}
	}
	var plan syncPlan
	for _, m := range ms {
		mine := info
		mine.Standby = nil
		for _, id := range standby[m] {
			mine.Standby = append(mine.Standby, id.String())
		}
		ud, _ := json.Marshal(mine)
		a := kmsg.NewConsumerMemberAssignment()
		a.Version = 1
		byTopic := map[string][]int32{}
		for _, id := range assigned[m] {
			for _, topic := range app.subTopics[id.Subtopology] {
				byTopic[topic] = append(byTopic[topic], id.Partition)
			}
		}
		var names []string
		for t := range byTopic {
			names = append(names, t)
		}
		sort.Strings(names)
		for _, t := range names {
			at := kmsg.NewConsumerMemberAssignmentTopic()
			at.Topic = t
			at.Partitions = byTopic[t]
			sort.Slice(at.Partitions, func(i, j int) bool { return at.Partitions[i] < at.Partitions[j] })
			a.Topics = append(a.Topics, at)
		}
		a.UserData = ud
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID = m.id
		sa.MemberAssignment = a.AppendTo(nil)
		plan = append(plan, sa)
	}
	return plan
}

// standbys places n standby tasks of every task, each on a member of a
// process that holds neither the task's active copy nor another of its
// standbys (Kafka Streams places standbys on other clients), choosing the
// member with the fewest standbys so far. A task gets fewer than n when
// there are not enough other processes.
func (tb *taskBalance) standbys(tasks []TaskID, target, owner map[TaskID]*memberMeta, n int) map[*memberMeta][]TaskID {
	out := map[*memberMeta][]TaskID{}
	if n <= 0 {
		return out
	}
	ms := append([]*memberMeta(nil), tb.members...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].id < ms[j].id })
	for _, id := range tasks {
		used := map[string]bool{target[id].process: true}
		if o := owner[id]; o != nil {
			used[o.process] = true // still active there until it revokes
		}
		for range n {
			var best *memberMeta
			for _, m := range ms {
				if !used[m.process] && (best == nil || len(out[m]) < len(out[best])) {
					best = m
				}
			}
			if best == nil {
				break
			}
			used[best.process] = true
			out[best] = append(out[best], id)
		}
	}
	return out
}
