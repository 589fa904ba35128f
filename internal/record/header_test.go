package record

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestParseHeaderReadsFranzGoBatch(t *testing.T) {
	b := franzBatch(t, 3, func(rb *kmsg.RecordBatch) {
		rb.FirstOffset = 42
		rb.PartitionLeaderEpoch = 7
		rb.Attributes = 0x10 | 0x08 | int16(CodecNone)
		rb.ProducerID = 99
		rb.ProducerEpoch = 3
		rb.FirstSequence = 11
	})
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Header{
		BaseOffset: 42, Length: int32(len(b) - 12), PartitionLeaderEpoch: 7, Magic: 2,
		CRC: binary.BigEndian.Uint32(b[17:]), Attributes: 0x18, LastOffsetDelta: 2,
		FirstTimestamp: testNow, MaxTimestamp: testNow + 2, ProducerID: 99, ProducerEpoch: 3,
		BaseSequence: 11, NumRecords: 3,
	}
	if h != want {
		t.Fatalf("header\n got %+v\nwant %+v", h, want)
	}
	if !h.IsTransactional() || h.IsControl() || h.TimestampType() != LogAppendTime || !h.IsIdempotent() {
		t.Fatalf("attribute accessors wrong: %+v", h)
	}
	if h.TotalSize() != len(b) || h.LastOffset() != 44 || h.LastSequence() != 13 {
		t.Fatalf("derived fields: total %d last offset %d last seq %d", h.TotalSize(), h.LastOffset(), h.LastSequence())
	}
	if got := appendHeader(nil, h); string(got) != string(b[:BatchHeaderSize]) {
		t.Fatal("appendHeader does not reproduce the parsed header bytes")
	}
}

func TestParseHeaderShort(t *testing.T) {
	for n := range BatchHeaderSize {
		if _, err := ParseHeader(make([]byte, n)); !errors.Is(err, kerr.CorruptMessage) {
			t.Fatalf("%d bytes: err %v, want CORRUPT_MESSAGE", n, err)
		}
	}
}

func TestHeaderAttributes(t *testing.T) {
	tests := []struct {
		attrs                                 int16
		codec                                 Codec
		tsType                                TimestampType
		transactional, control, deleteHorizon bool
	}{
		{0x00, CodecNone, CreateTime, false, false, false},
		{0x01, CodecGzip, CreateTime, false, false, false},
		{0x02, CodecSnappy, CreateTime, false, false, false},
		{0x0b, CodecLZ4, LogAppendTime, false, false, false},
		{0x14, CodecZstd, CreateTime, true, false, false},
		{0x30, CodecNone, CreateTime, true, true, false},
		{0x40, CodecNone, CreateTime, false, false, true},
	}
	for _, tt := range tests {
		h := Header{Attributes: tt.attrs}
		if h.Codec() != tt.codec || h.TimestampType() != tt.tsType || h.IsTransactional() != tt.transactional ||
			h.IsControl() != tt.control || h.HasDeleteHorizon() != tt.deleteHorizon {
			t.Errorf("attributes %#x decoded as codec %s, %s, txn %v, control %v, horizon %v",
				tt.attrs, h.Codec(), h.TimestampType(), h.IsTransactional(), h.IsControl(), h.HasDeleteHorizon())
		}
	}
}

func TestCodecString(t *testing.T) {
	want := map[Codec]string{CodecNone: "none", CodecGzip: "gzip", CodecSnappy: "snappy", CodecLZ4: "lz4", CodecZstd: "zstd", 6: "codec(6)"}
	for c, s := range want {
		if c.String() != s {
			t.Errorf("Codec(%d).String() = %q, want %q", c, c.String(), s)
		}
	}
}

func TestLastSequence(t *testing.T) {
	tests := []struct {
		name        string
		base, delta int32
		want        int32
	}{
		{"no sequence", -1, 5, -1},
		{"simple", 10, 4, 14},
		{"single record", 0, 0, 0},
		{"reaches max", math.MaxInt32 - 4, 4, math.MaxInt32},
		{"wraps to zero", math.MaxInt32, 1, 0},
		{"wraps past zero", math.MaxInt32 - 1, 5, 3},
	}
	for _, tt := range tests {
		h := Header{BaseSequence: tt.base, LastOffsetDelta: tt.delta}
		if got := h.LastSequence(); got != tt.want {
			t.Errorf("%s: LastSequence(base %d, delta %d) = %d, want %d", tt.name, tt.base, tt.delta, got, tt.want)
		}
		if got := (Header{BaseSequence: tt.base}).SequenceAt(tt.delta); got != tt.want {
			t.Errorf("%s: SequenceAt(base %d, delta %d) = %d, want %d", tt.name, tt.base, tt.delta, got, tt.want)
		}
	}
}

func TestIsIdempotent(t *testing.T) {
	for pid, want := range map[int64]bool{-1: false, -5: false, 0: true, 1234: true} {
		if got := (Header{ProducerID: pid}).IsIdempotent(); got != want {
			t.Errorf("producer id %d: IsIdempotent %v, want %v", pid, got, want)
		}
	}
}

func TestInPlaceEditsKeepCRCValid(t *testing.T) {
	b := franzBatch(t, 4, nil)
	SetBaseOffset(b, 1<<40)
	SetPartitionLeaderEpoch(b, 17)
	h, _ := ParseHeader(b)
	if h.BaseOffset != 1<<40 || h.PartitionLeaderEpoch != 17 {
		t.Fatalf("edits not applied: %+v", h)
	}
	if ComputeCRC(b) != h.CRC {
		t.Fatal("base offset / leader epoch must be outside the CRC")
	}
}

func TestSetLogAppendTime(t *testing.T) {
	b := franzBatch(t, 4, func(rb *kmsg.RecordBatch) { rb.Attributes = int16(CodecNone) | 0x10 })
	before, _ := ParseHeader(b)
	SetLogAppendTime(b, testNow+5000)
	h, _ := ParseHeader(b)
	if h.TimestampType() != LogAppendTime || h.MaxTimestamp != testNow+5000 {
		t.Fatalf("not stamped: %+v", h)
	}
	if h.FirstTimestamp != before.FirstTimestamp {
		t.Fatal("FirstTimestamp must be kept, as Kafka's setMaxTimestamp does")
	}
	if !h.IsTransactional() || h.Codec() != CodecNone {
		t.Fatal("other attribute bits must be preserved")
	}
	if ComputeCRC(b) != h.CRC {
		t.Fatal("CRC not recomputed")
	}
	// Every record now reads as the append time.
	_, recs, err := DecodeRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if ts := recordTimestamp(h, &recs[i]); ts != testNow+5000 {
			t.Fatalf("record %d timestamp %d", i, ts)
		}
	}
}

func TestComputeCRCMatchesKnownValue(t *testing.T) {
	// CRC-32C of "123456789" is the standard check value 0xE3069283.
	b := append(make([]byte, offAttributes), "123456789"...)
	if got := ComputeCRC(b); got != 0xE3069283 {
		t.Fatalf("ComputeCRC = %#x, want 0xe3069283", got)
	}
}
