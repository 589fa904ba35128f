package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/record"
)

// listOffsets asks for one partition's offset at timestamp ts.
func listOffsets(c *conn, v int16, topic string, partition int32, ts int64, currentEpoch int32) kmsg.ListOffsetsResponseTopicPartition {
	c.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, ts, currentEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return do[*kmsg.ListOffsetsResponse](c, v, req).Topics[0].Partitions[0]
}

func TestListOffsets(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "lo", 1, nil)
	createTopic(c, "empty", 1, nil)
	base := time.Now().Add(-time.Hour).UnixMilli()
	// Offsets 0-1 at base, 2 at base+2000 (the maximum), 3 at base+1000.
	for _, b := range []struct {
		ts     int64
		values []string
	}{{base, []string{"a", "b"}}, {base + 2000, []string{"c"}}, {base + 1000, []string{"d"}}} {
		resp := do[*kmsg.ProduceResponse](c, 11, produceReq("lo", 0, 1, batchAt(t, record.CodecNone, b.ts, b.values...)))
		if ec := resp.Topics[0].Partitions[0].ErrorCode; ec != 0 {
			t.Fatalf("produce: %d", ec)
		}
	}

	tests := []struct {
		name      string
		v         int16
		topic     string
		ts        int64
		current   int32
		wantErr   int16
		wantOff   int64
		wantTs    int64
		wantEpoch int32
	}{
		{"latest v1", 1, "lo", -1, -1, 0, 4, -1, -1},
		{"latest v4 has the leader epoch", 4, "lo", -1, -1, 0, 4, -1, 0},
		{"earliest v1", 1, "lo", -2, -1, 0, 0, -1, -1},
		{"earliest v4 has the epoch of the offset", 4, "lo", -2, -1, 0, 0, -1, 0},
		{"max timestamp v7", 7, "lo", -3, -1, 0, 2, base + 2000, 0},
		{"earliest local v8", 8, "lo", -4, -1, 0, 0, -1, 0},
		{"by timestamp: exact", 8, "lo", base + 1000, -1, 0, 2, base + 2000, 0},
		{"by timestamp: first at or after", 8, "lo", base + 1, -1, 0, 2, base + 2000, 0},
		{"by timestamp: first record", 8, "lo", base - 5, -1, 0, 0, base, 0},
		{"by timestamp: none after", 8, "lo", base + 5000, -1, 0, -1, -1, -1},
		{"by timestamp v1 has no epoch", 1, "lo", base, -1, 0, 0, base, -1},
		{"current leader epoch matches", 8, "lo", -1, 0, 0, 4, -1, 0},
		{"current leader epoch newer", 8, "lo", -1, 3, kerr.UnknownLeaderEpoch.Code, -1, -1, -1},
		{"empty log latest", 8, "empty", -1, -1, 0, 0, -1, 0},
		{"empty log earliest", 8, "empty", -2, -1, 0, 0, -1, 0},
		{"empty log max timestamp", 8, "empty", -3, -1, 0, -1, -1, -1},
		{"unknown topic", 8, "nope", -1, -1, kerr.UnknownTopicOrPartition.Code, -1, -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := listOffsets(c, tt.v, tt.topic, 0, tt.ts, tt.current)
			if p.ErrorCode != tt.wantErr {
				t.Fatalf("error %d, want %d", p.ErrorCode, tt.wantErr)
			}
			if p.Offset != tt.wantOff || p.Timestamp != tt.wantTs || p.LeaderEpoch != tt.wantEpoch {
				t.Errorf("offset %d timestamp %d epoch %d, want %d %d %d", p.Offset, p.Timestamp, p.LeaderEpoch, tt.wantOff, tt.wantTs, tt.wantEpoch)
			}
		})
	}
}
