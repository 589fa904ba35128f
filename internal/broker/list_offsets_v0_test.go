package broker_test

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listOffsetsV0 asks ListOffsets v0 for up to maxNum offsets before ts.
func listOffsetsV0(c *conn, topic string, ts int64, maxNum int32) kmsg.ListOffsetsResponseTopicPartition {
	c.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.MaxNumOffsets = ts, maxNum
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return do[*kmsg.ListOffsetsResponse](c, 0, req).Topics[0].Partitions[0]
}

// TestListOffsetsV0: the multi-offset form (served by Kafka 3.9, dropped by
// Kafka 4): segment boundaries and the log end, largest first, at most
// max_num_offsets, chosen by LATEST, EARLIEST or segment file times.
func TestListOffsetsV0(t *testing.T) {
	tn := startNode(t, map[string]string{"log.segment.bytes": "1048576"})
	c := tn.dial()
	createTopic(c, "lo0", 1, map[string]string{"segment.bytes": "200"})
	createTopic(c, "empty0", 1, nil)
	for i := 0; i < 4; i++ {
		produce(c, "lo0", 0, "a value long enough to fill a small segment quickly, "+string(rune('a'+i)))
	}
	// Each batch rolls a segment (segment.bytes 200), so the candidates
	// are the segment bases 0..3 and, when the active one has data, the
	// log end 4.
	latest := listOffsetsV0(c, "lo0", -1, 100)
	if latest.ErrorCode != 0 || len(latest.OldStyleOffsets) < 2 || latest.OldStyleOffsets[0] != 4 ||
		!slices.IsSortedFunc(latest.OldStyleOffsets, func(a, b int64) int { return int(b - a) }) {
		t.Fatalf("latest: error %d offsets %v, want descending from 4", latest.ErrorCode, latest.OldStyleOffsets)
	}
	if last := latest.OldStyleOffsets[len(latest.OldStyleOffsets)-1]; last != 0 {
		t.Errorf("latest: offsets %v do not reach the log start 0", latest.OldStyleOffsets)
	}
	for _, tt := range []struct {
		name   string
		ts     int64
		maxNum int32
		want   []int64
	}{
		{"latest, one offset", -1, 1, []int64{4}},
		{"earliest", -2, 10, []int64{0}},
		{"before any segment existed", time.Now().Add(-time.Hour).UnixMilli(), 10, []int64{}},
		{"in the future: everything", time.Now().Add(time.Hour).UnixMilli(), 100, latest.OldStyleOffsets},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := listOffsetsV0(c, "lo0", tt.ts, tt.maxNum)
			if p.ErrorCode != 0 || !slices.Equal(p.OldStyleOffsets, tt.want) {
				t.Errorf("error %d offsets %v, want %v", p.ErrorCode, p.OldStyleOffsets, tt.want)
			}
		})
	}
	if p := listOffsetsV0(c, "empty0", -1, 10); p.ErrorCode != 0 || !slices.Equal(p.OldStyleOffsets, []int64{0}) {
		t.Errorf("empty log: error %d offsets %v, want [0]", p.ErrorCode, p.OldStyleOffsets)
	}
	if p := listOffsetsV0(c, "nope", -1, 10); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown topic: error %d", p.ErrorCode)
	}
}
