package herder

import (
	"reflect"
	"testing"
	"time"
)

func TestProtocolRoundTrip(t *testing.T) {
	m := memberMeta{version: 2, url: "http://h:8083/", configOffset: 41, allocation: allocation{"c": {-1, 0, 1}}}
	got, err := decodeMemberMeta(m.encode())
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("meta %+v %v", got, err)
	}
	v0, err := decodeMemberMeta(memberMeta{url: "u", configOffset: 3}.encode())
	if err != nil || v0.url != "u" || v0.configOffset != 3 {
		t.Fatalf("v0 %+v %v", v0, err)
	}
	a := assignment{version: 1, leader: "m1", leaderURL: "http://l/", configOffset: 9, assigned: allocation{"c": {0}}, revoked: allocation{"d": {-1}}, delay: 500}
	ga, err := decodeAssignment(a.encode())
	if err != nil || !reflect.DeepEqual(ga, a) {
		t.Fatalf("assignment %+v %v", ga, err)
	}
	if _, err := decodeAssignment([]byte{0, 1}); err == nil {
		t.Fatal("truncated assignment decoded")
	}
}

func state(tasks map[string]int) clusterState {
	st := newClusterState()
	for c, n := range tasks {
		st.configs[c] = map[string]string{}
		st.tasks[c] = make([]map[string]string, n)
	}
	return st
}

// A departed member's work is held back for scheduled.rebalance.max.delay.ms,
// then goes to the members left; new work goes to the least loaded.
func TestCooperativeAssignorDelaysLostWork(t *testing.T) {
	a := assignor{maxDelay: 10 * time.Second}
	st := state(map[string]int{"c": 5})
	now := time.Now()
	asg, rev, d := a.cooperative(now, map[string]allocation{"m1": {}, "m2": {}, "m3": {}}, st)
	total := 0
	for _, al := range asg {
		total += al.size()
		if al.size() != 2 {
			t.Fatalf("uneven first assignment: %v", asg)
		}
	}
	if total != 6 || d != 0 || rev["m1"].size() != 0 {
		t.Fatalf("first: %v %v %v", asg, rev, d)
	}
	members := map[string]allocation{"m1": asg["m1"], "m2": asg["m2"]} // m3 is gone
	asg2, _, d2 := a.cooperative(now.Add(time.Second), members, st)
	if d2 <= 0 || asg2["m1"].size()+asg2["m2"].size() != 0 {
		t.Fatalf("lost work reassigned before the delay: %v %v", asg2, d2)
	}
	asg3, _, d3 := a.cooperative(now.Add(11*time.Second), members, st)
	if d3 != 0 || asg3["m1"].size()+asg3["m2"].size() != 2 {
		t.Fatalf("lost work after the delay: %v %v", asg3, d3)
	}
}

func TestEagerAssignorSpreadsEverything(t *testing.T) {
	a := assignor{}
	out := a.eager([]string{"b", "a"}, state(map[string]int{"x": 3}))
	if out["a"].size()+out["b"].size() != 4 || out["a"].size() != 2 {
		t.Fatalf("eager: %v", out)
	}
}
