package record

import (
	"testing"
)

// legacyMessages decodes a legacy message set into offset, timestamp and
// key=value strings.
func legacyMessages(t *testing.T, data []byte) (offsets, ts []int64, kv []string) {
	t.Helper()
	for len(data) >= LengthFieldEnd {
		size := int(int32(be32(data[offLength:])))
		msg := data[:LengthFieldEnd+size]
		data = data[LengthFieldEnd+size:]
		m, err := decodeLegacy(msg, int8(msg[legacyOffMagic]))
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, int64(be64(msg)))
		ts = append(ts, m.timestamp)
		kv = append(kv, string(m.key)+"="+string(m.value))
	}
	return offsets, ts, kv
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
func be64(b []byte) uint64 { return uint64(be32(b))<<32 | uint64(be32(b[4:])) }

func TestDownConvert(t *testing.T) {
	var data []byte
	for i, c := range []Codec{CodecNone, CodecGzip, CodecLZ4} {
		h := sampleHeader(3)
		h.BaseOffset = int64(i * 3)
		data = append(data, mustBuild(t, h, sampleRecords(3, 4), c)...)
	}
	ctl := sampleHeader(1)
	ctl.BaseOffset, ctl.Attributes = 9, attrControl|attrTransactional
	data = append(data, mustBuild(t, ctl, sampleRecords(1, 4), CodecNone)...)
	data = append(data, data[:30]...) // a partial trailing batch

	for _, magic := range []int8{0, 1} {
		out, err := DownConvert(data, magic, 1, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		offsets, ts, kv := legacyMessages(t, out)
		if len(offsets) != 8 || offsets[0] != 1 || offsets[7] != 8 {
			t.Fatalf("magic %d: offsets %v, want 1..8 (before the fetch offset and the control batch left out)", magic, offsets)
		}
		if kv[1] != "key-2=cdef" {
			t.Errorf("magic %d: second message %s", magic, kv[1])
		}
		if magic == 0 && ts[0] != -1 || magic == 1 && ts[0] != testNow+3 {
			t.Errorf("magic %d: timestamp %d", magic, ts[0])
		}
		// The converted set is what old producers send: it converts back.
		back, err := UpConvertLegacy(out)
		if err != nil {
			t.Fatalf("magic %d: converting back: %v", magic, err)
		}
		if _, recs, err := DecodeRecords(back); err != nil || len(recs) != 8 {
			t.Fatalf("magic %d: back to v2: %d records, %v", magic, len(recs), err)
		}
	}
	// A byte limit stops before the batch that passes it, never inside the
	// first batch.
	out, _ := DownConvert(data, 1, 0, 10)
	if offsets, _, _ := legacyMessages(t, out); len(offsets) != 3 {
		t.Errorf("limited: %d messages, want the first batch's 3", len(offsets))
	}
	// The first batch with messages is sent whole even when a control
	// batch, or records before the fetch offset, come before it.
	ahead := append(append([]byte{}, data[len(data)-30-len(mustBuild(t, ctl, sampleRecords(1, 4), CodecNone)):len(data)-30]...), data...)
	out, _ = DownConvert(ahead, 1, 0, 10)
	if offsets, _, _ := legacyMessages(t, out); len(offsets) != 3 || offsets[0] != 0 {
		t.Errorf("after a control batch: offsets %v, want the next batch's 0..2", offsets)
	}
	out, _ = DownConvert(data, 1, 3, 10)
	if offsets, _, _ := legacyMessages(t, out); len(offsets) != 3 || offsets[0] != 3 {
		t.Errorf("first batch before the fetch offset: offsets %v, want 3..5", offsets)
	}
	if out, err := DownConvert(nil, 1, 0, 100); err != nil || out == nil || len(out) != 0 {
		t.Errorf("empty: %v %v", out, err)
	}
}
