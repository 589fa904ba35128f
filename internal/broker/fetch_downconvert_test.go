package broker_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// legacyValues decodes a v0/v1 message set into its offsets and values.
func legacyValues(t *testing.T, magic int8, data []byte) (offsets []int64, values []string) {
	t.Helper()
	for len(data) >= 12 {
		n := 12 + int(binary.BigEndian.Uint32(data[8:]))
		msg := data[:n]
		data = data[n:]
		if int8(msg[16]) != magic {
			t.Fatalf("message magic %d, want %d", msg[16], magic)
		}
		var off int64
		var value []byte
		if magic == 0 {
			var m kmsg.MessageV0
			if err := m.ReadFrom(msg); err != nil {
				t.Fatal(err)
			}
			off, value = m.Offset, m.Value
		} else {
			var m kmsg.MessageV1
			if err := m.ReadFrom(msg); err != nil {
				t.Fatal(err)
			}
			if m.Timestamp <= 0 {
				t.Errorf("v1 message without its timestamp: %d", m.Timestamp)
			}
			off, value = m.Offset, m.Value
		}
		offsets = append(offsets, off)
		values = append(values, string(value))
	}
	return offsets, values
}

// TestFetchDownConversion: Fetch v0-v3 get message format v0 (v0-v1) or v1
// (v2-v3), as Kafka 3.9 sent them; message.downconversion.enable=false
// answers UNSUPPORTED_VERSION.
func TestFetchDownConversion(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "dc", 1, nil)
	createTopic(c, "nodc", 1, map[string]string{"message.downconversion.enable": "false"})
	produce(c, "dc", 0, "a", "b")
	produce(c, "dc", 0, "c")
	produce(c, "nodc", 0, "x")

	for _, tt := range []struct {
		v     int16
		magic int8
	}{{0, 0}, {1, 0}, {2, 1}, {3, 1}} {
		p := do[*kmsg.FetchResponse](c, tt.v, fetchReq("dc", [16]byte{}, 0, 1)).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.HighWatermark != 3 {
			t.Fatalf("v%d: error %d, high watermark %d", tt.v, p.ErrorCode, p.HighWatermark)
		}
		offsets, values := legacyValues(t, tt.magic, p.RecordBatches)
		if len(offsets) != 2 || offsets[0] != 1 || offsets[1] != 2 || values[0] != "b" || values[1] != "c" {
			t.Errorf("v%d: offsets %v values %v, want 1,2 and b,c (offset 0 before the fetch offset left out)", tt.v, offsets, values)
		}
		if p := do[*kmsg.FetchResponse](c, tt.v, fetchReq("nodc", [16]byte{}, 0, 0)).Topics[0].Partitions[0]; p.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Errorf("v%d with down-conversion disabled: error %d, want UNSUPPORTED_VERSION", tt.v, p.ErrorCode)
		}
	}

	// A long poll at v3 is answered by an append: down-converted bytes
	// count towards min_bytes.
	req := fetchReq("dc", [16]byte{}, 0, 3)
	req.MinBytes, req.MaxWaitMillis = 1, 10_000
	req.SetVersion(3)
	corr := c.send(req)
	other := tn.dial()
	start := time.Now()
	produce(other, "dc", 0, "d")
	resp, err := c.recv(req, corr, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, values := legacyValues(t, 1, resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches); len(values) != 1 || values[0] != "d" {
		t.Errorf("long poll: values %v, want d", values)
	}
	if time.Since(start) > 8*time.Second {
		t.Error("long poll waited out max_wait_ms despite the append")
	}
}
