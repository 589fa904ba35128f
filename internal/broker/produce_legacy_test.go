package broker_test

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/record"
)

// legacyMessage appends one v0 or v1 message to dst.
func legacyMessage(dst []byte, magic int8, ts int64, key, value []byte) []byte {
	var body []byte
	if magic == 0 {
		m := kmsg.MessageV0{Magic: 0, Key: key, Value: value}
		body = m.AppendTo(nil)
	} else {
		m := kmsg.MessageV1{Magic: 1, Timestamp: ts, Key: key, Value: value}
		body = m.AppendTo(nil)
	}
	binary.BigEndian.PutUint32(body[8:], uint32(len(body)-12))
	binary.BigEndian.PutUint32(body[12:], crc32.ChecksumIEEE(body[16:]))
	return append(dst, body...)
}

// TestProduceLegacyMessageSets: Produce v0-v2 carry magic 0/1 message sets
// (clients before Kafka 0.11); they are converted to v2 batches as Kafka
// 3.9 did and read back by any fetch.
func TestProduceLegacyMessageSets(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "legacy", 1, nil)
	createTopic(c, "legacy-compact", 1, map[string]string{"cleanup.policy": "compact"})
	now := time.Now().UnixMilli()

	v0 := legacyMessage(legacyMessage(nil, 0, 0, []byte("k0"), []byte("v0")), 0, 0, nil, []byte("v1"))
	v1 := legacyMessage(nil, 1, now, []byte("k2"), []byte("v2"))
	var next int64
	for _, tt := range []struct {
		v    int16
		data []byte
		n    int64
	}{{0, v0, 2}, {1, v0, 2}, {2, v1, 1}} {
		p := do[*kmsg.ProduceResponse](c, tt.v, produceReq("legacy", 0, 1, tt.data)).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.BaseOffset != next {
			t.Fatalf("v%d: error %d (%v) base offset %d, want %d", tt.v, p.ErrorCode, p.ErrorMessage, p.BaseOffset, next)
		}
		next += tt.n
	}
	resp := do[*kmsg.FetchResponse](c, 11, fetchReq("legacy", [16]byte{}, 0, 0))
	data := resp.Topics[0].Partitions[0].RecordBatches
	var got []string
	var timestamps []int64
	for len(data) > 0 {
		h, recs, err := record.DecodeRecords(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			got = append(got, string(r.Key)+"="+string(r.Value))
			timestamps = append(timestamps, h.FirstTimestamp+r.TimestampDelta)
		}
		data = data[h.TotalSize():]
	}
	want := []string{"k0=v0", "=v1", "k0=v0", "=v1", "k2=v2"}
	if len(got) != len(want) {
		t.Fatalf("read back %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d: %s, want %s", i, got[i], want[i])
		}
	}
	if timestamps[0] != -1 || timestamps[4] != now {
		t.Errorf("timestamps %v: want -1 for magic 0 and %d for the magic 1 message", timestamps, now)
	}

	corrupt := append([]byte(nil), v1...)
	corrupt[len(corrupt)-1] ^= 1
	for _, tt := range []struct {
		name  string
		topic string
		data  []byte
		want  int16
	}{
		{"crc mismatch", "legacy", corrupt, kerr.CorruptMessage.Code},
		{"null key on a compacted topic", "legacy-compact", v0, kerr.InvalidRecord.Code},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := do[*kmsg.ProduceResponse](c, 2, produceReq(tt.topic, 0, 1, tt.data)).Topics[0].Partitions[0]
			if p.ErrorCode != tt.want {
				t.Errorf("error %d (%v), want %d", p.ErrorCode, p.ErrorMessage, tt.want)
			}
		})
	}
}
