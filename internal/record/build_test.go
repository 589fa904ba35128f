package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestBuildDecodeRoundTripEveryCodec(t *testing.T) {
	for _, c := range allCodecs {
		for _, n := range []int{0, 1, 16, 300} {
			h := sampleHeader(max(n, 1))
			h.Attributes = 0x10 // transactional must survive
			h.ProducerID, h.ProducerEpoch, h.BaseSequence = 5, 1, 100
			recs := sampleRecords(n, 1000)
			b := mustBuild(t, h, recs, c)
			got, dec, err := DecodeRecords(b)
			if err != nil {
				t.Fatalf("%s/%d: decode: %v", c, n, err)
			}
			if got.Codec() != c || !got.IsTransactional() || got.NumRecords != int32(n) || got.TotalSize() != len(b) {
				t.Fatalf("%s/%d: header %+v", c, n, got)
			}
			if got.CRC != ComputeCRC(b) {
				t.Fatalf("%s/%d: CRC not filled", c, n)
			}
			if got.ProducerID != 5 || got.BaseSequence != 100 || got.FirstTimestamp != h.FirstTimestamp {
				t.Fatalf("%s/%d: header fields not kept: %+v", c, n, got)
			}
			if n == 0 {
				if len(dec) != 0 {
					t.Fatalf("%s: decoded %d records from empty batch", c, len(dec))
				}
				continue
			}
			if !reflect.DeepEqual(dec, recs) {
				t.Fatalf("%s/%d: records differ after round trip", c, n)
			}
		}
	}
}

func TestCompressedBatchesAreSmaller(t *testing.T) {
	recs := sampleRecords(64, 1024)
	plain := mustBuild(t, sampleHeader(64), recs, CodecNone)
	for _, c := range allCodecs[1:] {
		if b := mustBuild(t, sampleHeader(64), recs, c); len(b) >= len(plain)/2 {
			t.Errorf("%s batch is %d bytes, uncompressed %d: not compressing", c, len(b), len(plain))
		}
	}
}

func TestRecompressEveryPair(t *testing.T) {
	recs := sampleRecords(20, 200)
	for _, from := range allCodecs {
		src := mustBuild(t, sampleHeader(20), recs, from)
		srcHdr, _ := ParseHeader(src)
		for _, to := range allCodecs {
			out, err := Recompress(src, to)
			if err != nil {
				t.Fatalf("%s->%s: %v", from, to, err)
			}
			h, dec, err := DecodeRecords(out)
			if err != nil {
				t.Fatalf("%s->%s: decode: %v", from, to, err)
			}
			if h.Codec() != to || h.CRC != ComputeCRC(out) {
				t.Fatalf("%s->%s: codec %s / bad CRC", from, to, h.Codec())
			}
			srcHdr.Attributes = srcHdr.Attributes&^attrCodecMask | int16(to)
			srcHdr.Length, srcHdr.CRC = h.Length, h.CRC
			if h != srcHdr {
				t.Fatalf("%s->%s: header changed\n got %+v\nwant %+v", from, to, h, srcHdr)
			}
			if !reflect.DeepEqual(dec, recs) {
				t.Fatalf("%s->%s: records changed", from, to)
			}
		}
	}
}

func TestSnappyFramings(t *testing.T) {
	raw := bytes.Repeat([]byte("kafka snappy framing "), 5000) // > 2 xerial blocks
	xerial := appendXerialSnappy(nil, raw)
	if !bytes.HasPrefix(xerial, xerialMagic) || binary.BigEndian.Uint32(xerial[8:]) != 1 || binary.BigEndian.Uint32(xerial[12:]) != 1 {
		t.Fatalf("xerial header %x", xerial[:16])
	}
	bare := s2.EncodeSnappy(nil, raw) // franz-go and kafka-python write this
	concatenated := append(appendXerialSnappy(nil, raw[:1000]), appendXerialSnappy(nil, raw[1000:])...)
	for name, enc := range map[string][]byte{"xerial": xerial, "raw block": bare, "concatenated xerial": concatenated} {
		got, err := decompress(nil, CodecSnappy, enc)
		if err != nil || !bytes.Equal(got, raw) {
			t.Errorf("%s: decode err %v, equal %v", name, err, bytes.Equal(got, raw))
		}
	}
	for name, enc := range map[string][]byte{
		"truncated chunk":  xerial[:len(xerial)-3],
		"truncated header": xerial[:12],
		"garbage":          []byte("\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\xff\xff\xff\xff"),
	} {
		if _, err := decompress(nil, CodecSnappy, enc); !errors.Is(err, kerr.CorruptMessage) {
			t.Errorf("%s: err %v, want CORRUPT_MESSAGE", name, err)
		}
	}
}

func TestLZ4FrameMatchesKafka(t *testing.T) {
	enc, err := compress(nil, CodecLZ4, DefaultLevel, bytes.Repeat([]byte("x"), 100_000))
	if err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint32(enc) != 0x184D2204 {
		t.Fatalf("not an LZ4 frame: %x", enc[:4])
	}
	// FLG: version 01, block independence, no block/content checksum, no
	// content size; BD: 64 KiB blocks. This is KafkaLZ4BlockOutputStream's.
	if enc[4] != 0x60 || enc[5] != 0x40 {
		t.Fatalf("FLG %#x BD %#x, want 0x60 0x40", enc[4], enc[5])
	}
	// Frames with content checksums (as other writers produce) decode too.
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	_ = w.Apply(lz4.ChecksumOption(true), lz4.BlockSizeOption(lz4.Block4Mb))
	w.Write([]byte("hello"))
	w.Close()
	if got, err := decompress(nil, CodecLZ4, buf.Bytes()); err != nil || string(got) != "hello" {
		t.Fatalf("decode checksummed frame: %q %v", got, err)
	}
}

func TestDecompressRejectsGarbage(t *testing.T) {
	for _, c := range allCodecs[1:] {
		if _, err := decompress(nil, c, []byte("definitely not compressed")); !errors.Is(err, kerr.CorruptMessage) {
			t.Errorf("%s: err %v, want CORRUPT_MESSAGE", c, err)
		}
	}
	if _, err := decompress(nil, 6, nil); !errors.Is(err, kerr.UnsupportedCompressionType) {
		t.Errorf("codec 6: %v", err)
	}
}

func TestDecodeRecordsRejectsMalformed(t *testing.T) {
	good := mustBuild(t, sampleHeader(3), sampleRecords(3, 10), CodecNone)
	withCount := func(n int32) []byte {
		b := bytes.Clone(good)
		binary.BigEndian.PutUint32(b[offNumRecords:], uint32(n))
		return b
	}
	withExtra := func() []byte {
		b := append(bytes.Clone(good), 0)
		binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-12))
		return b
	}
	tests := []struct {
		name  string
		batch []byte
		want  error
	}{
		{"short header", good[:60], kerr.CorruptMessage},
		{"length beyond buffer", good[:len(good)-1], kerr.CorruptMessage},
		{"magic 1", func() []byte { b := bytes.Clone(good); b[offMagic] = 1; return b }(), kerr.CorruptMessage},
		{"count too high", withCount(4), kerr.InvalidRecord},
		{"count too low", withCount(2), kerr.InvalidRecord},
		{"negative count", withCount(-1), kerr.InvalidRecord},
		{"trailing byte in records", withExtra(), kerr.InvalidRecord},
		{"unknown codec", func() []byte { b := bytes.Clone(good); b[offAttributes+1] |= 7; return b }(), kerr.UnsupportedCompressionType},
	}
	for _, tt := range tests {
		if _, _, err := DecodeRecords(tt.batch); !errors.Is(err, tt.want) {
			t.Errorf("%s: err %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestParseRecordFraming(t *testing.T) {
	// Each case is a hand-encoded record; zig-zag: 0->0, -1->1, 1->2, 2->4.
	tests := []struct {
		name string
		rec  []byte
		ok   bool
	}{
		{"minimal, null key and value", []byte{14 >> 1 * 2, 0, 0, 0, 1, 1, 0}, false}, // length 7 claims more than present
		{"minimal exact", []byte{6 * 2, 0, 0, 0, 1, 1, 0}, true},
		{"body longer than fields", []byte{7 * 2, 0, 0, 0, 1, 1, 0, 0}, false},
		{"negative header count", []byte{6 * 2, 0, 0, 0, 1, 1, 1}, false},
		{"null header key", []byte{8 * 2, 0, 0, 0, 1, 1, 2, 1, 1}, false},
		{"header with null value", []byte{9 * 2, 0, 0, 0, 1, 1, 2, 2, 'k', 1}, true},
		{"key longer than body", []byte{7 * 2, 0, 0, 0, 10, 'k', 1, 0}, false},
		{"negative body length", []byte{1}, false},
		{"overlong varint", []byte{6 * 2, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0, 1, 1, 0}, false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		_, _, err := parseRecord(tt.rec, true, nil)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && !errors.Is(err, kerr.InvalidRecord) {
			t.Errorf("%s: err %v does not wrap INVALID_RECORD", tt.name, err)
		}
	}
}
