package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A commit to a topic or a partition index the cluster does not have is
// UNKNOWN_TOPIC_OR_PARTITION for those partitions only, at every version,
// as Kafka's KafkaApis answers before the group sees the commit; the known
// partitions of the same request are committed.
func TestOffsetCommitUnknownTopicOrPartition(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "oc-known", 2, nil)
	waitCoordinator(t, c, "oc-group")

	for _, v := range []int16{0, 1, 2, 5, 8, 9} {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group = "oc-group"
		req.Generation = -1
		req.RetentionTimeMillis = -1
		add := func(topic string, parts ...int32) {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = topic
			for _, p := range parts {
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Timestamp = p, 7, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		add("oc-known", 0, 2, 1, -1)
		add("oc-missing", 0)
		resp := do[*kmsg.OffsetCommitResponse](c, v, req)
		want := map[string]map[int32]int16{
			"oc-known":   {0: 0, 1: 0, 2: kerr.UnknownTopicOrPartition.Code, -1: kerr.UnknownTopicOrPartition.Code},
			"oc-missing": {0: kerr.UnknownTopicOrPartition.Code},
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if w := want[rt.Topic][rp.Partition]; rp.ErrorCode != w {
					t.Errorf("v%d %s-%d: error %d, want %d", v, rt.Topic, rp.Partition, rp.ErrorCode, w)
				}
			}
		}

		// Only unknown partitions: the group is not consulted (a
		// generation-based commit to a missing group would otherwise
		// fail as a whole).
		only := kmsg.NewPtrOffsetCommitRequest()
		only.Group, only.Generation, only.MemberID, only.RetentionTimeMillis = "oc-no-such-group", 5, "m", -1
		only.Topics = req.Topics[1:]
		r2 := do[*kmsg.OffsetCommitResponse](c, v, only)
		if v >= 1 && r2.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("v%d only unknown partitions: %+v", v, r2.Topics)
		}
	}

	f := kmsg.NewPtrOffsetFetchRequest()
	f.Group = "oc-group"
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = "oc-known", []int32{0, 1}
	f.Topics = append(f.Topics, ft)
	fr := do[*kmsg.OffsetFetchResponse](c, 5, f)
	for _, p := range fr.Topics[0].Partitions {
		if p.Offset != 7 {
			t.Fatalf("committed offset of oc-known-%d: %d, want 7", p.Partition, p.Offset)
		}
	}
}
