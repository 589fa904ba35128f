package compat

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestGroupsSurviveRestart: committed offsets and group metadata are
// loaded back from __consumer_offsets after SIGKILL and a restart: the
// consumer group is known again (Empty, protocol type consumer, after its
// member left) with its offsets, and a deleted group stays deleted.
func TestGroupsSurviveRestart(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, groupBrokerOptions...)
	adm := newAdmin(t, b)
	ctx := testContext(t, 60*time.Second)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 2, nil)

	live := "live-" + topic
	m := startGroupMember(t, b, live, topic)
	stableAssignment(t, adm, live, topic, 1, 2)
	m.close()

	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 42, LeaderEpoch: -1, Metadata: "kept"})
	offs.Add(kadm.Offset{Topic: topic, Partition: 1, At: 7, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, live, offs); err != nil || r.Error() != nil {
		t.Fatalf("CommitOffsets: %v / %v", err, r.Error())
	}
	gone := "gone-" + topic
	if r, err := adm.CommitOffsets(ctx, gone, offs); err != nil || r.Error() != nil {
		t.Fatalf("CommitOffsets: %v / %v", err, r.Error())
	}
	if r, err := adm.DeleteGroups(ctx, gone); err != nil || r[gone].Err != nil {
		t.Fatalf("DeleteGroups: %v / %v", err, r[gone].Err)
	}

	b.Kill()
	b.Restart()

	eventually(t, 20*time.Second, func() error {
		ds, err := adm.DescribeGroups(ctx, live)
		if err != nil {
			return err
		}
		return ds[live].Err
	})
	ds, _ := adm.DescribeGroups(ctx, live)
	if d := ds[live]; d.State != "Empty" || d.ProtocolType != "consumer" {
		t.Fatalf("after restart %s is %s / %q, want Empty / consumer", live, d.State, d.ProtocolType)
	}
	fetched, err := adm.FetchOffsets(ctx, live)
	if err != nil || fetched.Error() != nil {
		t.Fatalf("FetchOffsets: %v / %v", err, fetched.Error())
	}
	if o, _ := fetched.Lookup(topic, 0); o.At != 42 || o.Metadata != "kept" {
		t.Fatalf("partition 0 after restart: %+v, want 42/kept", o)
	}
	if o, _ := fetched.Lookup(topic, 1); o.At != 7 {
		t.Fatalf("partition 1 after restart: %+v, want 7", o)
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("ListGroups: %v", err)
	}
	if _, ok := listed[gone]; ok {
		t.Fatalf("deleted group %s is back after restart", gone)
	}
	if _, ok := listed[live]; !ok {
		t.Fatalf("group %s missing after restart: %v", live, listed.Groups())
	}
}
