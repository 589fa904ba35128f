package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// edit returns a copy of b changed by f, with the CRC recomputed when fix
// is set (so that the check under test is not the CRC one).
func edit(b []byte, fix bool, f func([]byte)) []byte {
	b = bytes.Clone(b)
	f(b)
	if fix {
		fixCRC(b)
	}
	return b
}

func put32(off int, v int32) func([]byte) {
	return func(b []byte) { binary.BigEndian.PutUint32(b[off:], uint32(v)) }
}

func put64(off int, v int64) func([]byte) {
	return func(b []byte) { binary.BigEndian.PutUint64(b[off:], uint64(v)) }
}

func setAttrs(v int16) func([]byte) {
	return func(b []byte) { binary.BigEndian.PutUint16(b[offAttributes:], uint16(v)) }
}

func TestValidateProduceRejects(t *testing.T) {
	good := franzBatch(t, 3, nil)
	lz4Batch := mustBuild(t, sampleHeader(3), sampleRecords(3, 100), CodecLZ4)
	zstdBatch := mustBuild(t, sampleHeader(3), sampleRecords(3, 100), CodecZstd)
	nullKeys := mustBuild(t, sampleHeader(3), sampleRecords(3, 10), CodecGzip) // record 1 has a null key

	// A batch whose framing is fine but whose record region has one byte
	// too many, and one whose compressed payload is not lz4 at all.
	extraByte := franzBatch(t, 3, func(rb *kmsg.RecordBatch) { rb.Records = append(rb.Records, 0) })
	notLZ4 := franzBatch(t, 3, func(rb *kmsg.RecordBatch) { rb.Attributes = int16(CodecLZ4) })
	badInnerRecord := func() []byte {
		h := sampleHeader(2)
		raw := appendRecord(nil, &Record{OffsetDelta: 0})
		raw = append(raw, 0x7e) // second record: length 63 with nothing behind it
		b := appendHeader(nil, h)
		b, _ = compress(b, CodecSnappy, DefaultLevel, raw)
		binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-12))
		binary.BigEndian.PutUint32(b[offNumRecords:], 2)
		binary.BigEndian.PutUint16(b[offAttributes:], uint16(CodecSnappy))
		b[offMagic] = 2
		fixCRC(b)
		return b
	}()
	magic1 := edit(good, false, func(b []byte) { b[offMagic] = 1 })

	strict := permissive()
	strict.TimestampBeforeMaxMs, strict.TimestampAfterMaxMs = 1000, 1000
	compacted := permissive()
	compacted.Compacted = true
	small := permissive()
	small.MaxMessageBytes = len(good) - 1
	latTopic := permissive()
	latTopic.TimestampType = LogAppendTime
	v6 := permissive()
	v6.ProduceVersion = 6

	tests := []struct {
		name string
		data []byte
		opts ValidateOptions
		want error
	}{
		// ProduceRequest.validateRecords framing.
		{"empty payload", nil, permissive(), kerr.InvalidRecord},
		{"shorter than the length field", good[:11], permissive(), kerr.InvalidRecord},
		{"size below record overhead", edit(good, false, put32(offLength, 13)), permissive(), kerr.CorruptMessage},
		{"magic 3", edit(good, false, func(b []byte) { b[offMagic] = 3 }), permissive(), kerr.CorruptMessage},
		{"negative magic", edit(good, false, func(b []byte) { b[offMagic] = 0xff }), permissive(), kerr.CorruptMessage},
		{"truncated batch", good[:len(good)-1], permissive(), kerr.InvalidRecord},
		{"magic 1 batch in v3+ request", magic1, permissive(), kerr.InvalidRecord},
		{"two batches", append(bytes.Clone(good), good...), permissive(), kerr.InvalidRecord},
		{"trailing bytes with impossible size", append(bytes.Clone(good), make([]byte, 12)...), permissive(), kerr.CorruptMessage},
		{"trailing bytes with bad magic", append(bytes.Clone(good), edit(good[:17], false, func(b []byte) { b[offMagic] = 5 })...), permissive(), kerr.CorruptMessage},
		{"zstd in produce v6", zstdBatch, v6, kerr.UnsupportedCompressionType},
		{"undefined codec 7", edit(good, true, setAttrs(7)), permissive(), kerr.UnsupportedCompressionType},
		// UnifiedLog.analyzeAndValidateRecords.
		{"non-zero base offset", edit(good, false, put64(offBaseOffset, 5)), permissive(), kerr.InvalidRecord},
		{"larger than max.message.bytes", good, small, kerr.MessageTooLarge},
		{"CRC mismatch", edit(good, false, func(b []byte) { b[len(b)-1] ^= 1 }), permissive(), kerr.CorruptMessage},
		{"CRC field damaged", edit(good, false, func(b []byte) { b[offCRC] ^= 0x80 }), permissive(), kerr.CorruptMessage},
		{"length below the v2 header", edit(good[:40], false, put32(offLength, 28)), permissive(), kerr.CorruptMessage},
		// LogValidator.validateBatch.
		{"negative last offset delta", edit(good, true, put32(offLastOffsetDelta, -1)), permissive(), kerr.InvalidRecord},
		{"zero record count", edit(good, true, put32(offNumRecords, 0)), permissive(), kerr.InvalidRecord},
		{"count disagrees with offset range", edit(good, true, put32(offNumRecords, 2)), permissive(), kerr.InvalidRecord},
		{"control batch from a client", edit(good, true, setAttrs(attrControl|attrTransactional)), permissive(), kerr.InvalidRecord},
		{"idempotent batch without sequence", edit(good, true, put64(offProducerID, 7)), permissive(), kerr.InvalidRecord},
		// Records.
		{"count claims more records than present", edit(good, true, func(b []byte) {
			put32(offNumRecords, 4)(b)
			put32(offLastOffsetDelta, 3)(b)
		}), permissive(), kerr.InvalidRecord},
		{"bytes left after the last record", extraByte, permissive(), kerr.InvalidRecord},
		{"compressed payload is not lz4", notLZ4, permissive(), kerr.CorruptMessage},
		{"malformed record inside snappy", badInnerRecord, permissive(), kerr.InvalidRecord},
		{"null key on compacted topic", nullKeys, compacted, kerr.InvalidRecord},
		{"timestamp too old", edit(good, true, put64(offFirstTimestamp, testNow-1001)), strict, kerr.InvalidTimestamp},
		{"timestamp too new", edit(lz4Batch, false, func([]byte) {}), func() ValidateOptions {
			o := strict
			o.Now = testNow - 1001
			return o
		}(), kerr.InvalidTimestamp},
		{"timestamp error wins over key error", edit(nullKeys, false, func([]byte) {}), func() ValidateOptions {
			o := strict
			o.Compacted = true
			o.Now = testNow + 10_000
			return o
		}(), kerr.InvalidTimestamp},
		{"client-set LogAppendTime on LogAppendTime topic", edit(good, true, setAttrs(attrTimestampType)), latTopic, kerr.InvalidTimestamp},
		{"client-set LogAppendTime without timestamp", edit(good, true, func(b []byte) {
			setAttrs(attrTimestampType)(b)
			put64(offMaxTimestamp, -1)(b)
		}), permissive(), kerr.InvalidTimestamp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ValidateProduce(tt.data, tt.opts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestValidateProduceAcceptsFranzGoBatchInPlace(t *testing.T) {
	data := franzBatch(t, 5, func(rb *kmsg.RecordBatch) {
		rb.Attributes = attrTransactional
		rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = 1000, 2, 40
	})
	orig := bytes.Clone(data)
	opts := permissive()
	opts.Compacted = true
	opts.TimestampBeforeMaxMs, opts.TimestampAfterMaxMs = 0, 4 // newest record is Now+4
	v, err := ValidateProduce(data, opts)
	if err != nil {
		t.Fatal(err)
	}
	if v.Recompressed || &v.Batch[0] != &data[0] || !bytes.Equal(data, orig) {
		t.Fatal("an already valid uncompressed batch must be accepted in place, untouched")
	}
	if v.Header.ProducerID != 1000 || v.Header.BaseSequence != 40 || !v.Header.IsTransactional() || v.Header.LastSequence() != 44 {
		t.Fatalf("producer fields changed: %+v", v.Header)
	}
}

func TestValidateProduceEveryCodec(t *testing.T) {
	recs := sampleRecords(16, 256)
	recs[1].Key = []byte("k") // compacted topics need keys
	for _, c := range allCodecs {
		data := mustBuild(t, sampleHeader(16), recs, c)
		opts := permissive()
		opts.Compacted = true
		v, err := ValidateProduce(data, opts)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if v.Recompressed || v.Header.Codec() != c || len(v.Batch) != len(data) {
			t.Fatalf("%s: producer codec must be kept in place: %+v", c, v.Header)
		}
	}
}

func TestValidateProduceRecompressesToTopicCodec(t *testing.T) {
	recs := sampleRecords(16, 256)
	for _, from := range allCodecs {
		for _, to := range allCodecs {
			data := mustBuild(t, sampleHeader(16), recs, from)
			opts := permissive()
			opts.KeepProducerCodec = false
			opts.TargetCodec = to
			v, err := ValidateProduce(data, opts)
			if err != nil {
				t.Fatalf("%s->%s: %v", from, to, err)
			}
			if v.Recompressed != (from != to) || v.Header.Codec() != to {
				t.Fatalf("%s->%s: recompressed %v codec %s", from, to, v.Recompressed, v.Header.Codec())
			}
			h, dec, err := DecodeRecords(v.Batch)
			if err != nil || h.CRC != ComputeCRC(v.Batch) {
				t.Fatalf("%s->%s: result undecodable or bad CRC: %v", from, to, err)
			}
			if len(dec) != len(recs) || h.MaxTimestamp != testNow+45 {
				t.Fatalf("%s->%s: %d records, max timestamp %d", from, to, len(dec), h.MaxTimestamp)
			}
			for i := range dec {
				if recordTimestamp(h, &dec[i]) != testNow+int64(3*i) || !bytes.Equal(dec[i].Value, recs[i].Value) ||
					!reflect.DeepEqual(dec[i].Headers, recs[i].Headers) {
					t.Fatalf("%s->%s: record %d changed", from, to, i)
				}
			}
		}
	}
}

func TestValidateProduceRebuildsCompressedBatchWithGappedOffsets(t *testing.T) {
	// Kafka rewrites compressed batches whose inner offsets are not 0..n-1
	// (LogValidator: "Some older clients do not implement the V1 internal
	// offsets correctly"), but leaves uncompressed ones alone.
	recs := sampleRecords(3, 20)
	for i := range recs {
		recs[i].OffsetDelta = int32(i * 2)
		recs[i].Attributes = 9
	}
	for _, c := range []Codec{CodecNone, CodecGzip} {
		h := sampleHeader(3)
		h.LastOffsetDelta = 2 // must equal count-1 to pass validateBatch
		data := mustBuild(t, h, recs, c)
		v, err := ValidateProduce(data, permissive())
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		_, dec, _ := DecodeRecords(v.Batch)
		if c == CodecNone {
			if v.Recompressed || dec[2].OffsetDelta != 4 {
				t.Fatalf("uncompressed batch must stay as is")
			}
			continue
		}
		if !v.Recompressed || v.Header.Codec() != c {
			t.Fatalf("%s: not rebuilt", c)
		}
		for i := range dec {
			if dec[i].OffsetDelta != int32(i) || dec[i].Attributes != 0 {
				t.Fatalf("%s: record %d has delta %d attrs %d", c, i, dec[i].OffsetDelta, dec[i].Attributes)
			}
		}
	}
}

func TestValidateProduceFixesMaxTimestamp(t *testing.T) {
	// Kafka overwrites a CreateTime batch's MaxTimestamp with the records'
	// real maximum; the time index depends on it.
	for _, c := range []Codec{CodecNone, CodecLZ4} {
		h := sampleHeader(4)
		h.MaxTimestamp = 0
		data := mustBuild(t, h, sampleRecords(4, 10), c)
		v, err := ValidateProduce(data, permissive())
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if v.Header.MaxTimestamp != testNow+9 || ComputeCRC(v.Batch) != v.Header.CRC || v.Recompressed {
			t.Fatalf("%s: max timestamp %d, crc ok %v", c, v.Header.MaxTimestamp, ComputeCRC(v.Batch) == v.Header.CRC)
		}
	}
}

func TestValidateProduceTimestampWindow(t *testing.T) {
	// KIP-937: accepted iff now-before <= ts <= now+after; -1 is exempt;
	// LogAppendTime topics do not look at client timestamps.
	tests := []struct {
		name   string
		ts     int64
		tsType TimestampType
		ok     bool
	}{
		{"oldest allowed", testNow - 100, CreateTime, true},
		{"one ms too old", testNow - 101, CreateTime, false},
		{"newest allowed", testNow + 50, CreateTime, true},
		{"one ms too new", testNow + 51, CreateTime, false},
		{"no timestamp", -1, CreateTime, true},
		{"ancient on LogAppendTime topic", 0, LogAppendTime, true},
		{"min int64 does not overflow into acceptance", math.MinInt64, CreateTime, false},
		{"max int64", math.MaxInt64, CreateTime, false},
	}
	for _, tt := range tests {
		h := sampleHeader(1)
		h.FirstTimestamp, h.MaxTimestamp = tt.ts, tt.ts
		recs := sampleRecords(1, 1)
		recs[0].TimestampDelta = 0
		opts := permissive()
		opts.TimestampType = tt.tsType
		opts.TimestampBeforeMaxMs, opts.TimestampAfterMaxMs = 100, 50
		_, err := ValidateProduce(mustBuild(t, h, recs, CodecNone), opts)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, kerr.InvalidTimestamp)) {
			t.Errorf("%s: err %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestValidateProduceTrimsPartialTrailingBatch(t *testing.T) {
	good := franzBatch(t, 2, nil)
	for _, tail := range [][]byte{{1, 2, 3}, good[:30], good[:len(good)-1]} {
		data := append(bytes.Clone(good), tail...)
		v, err := ValidateProduce(data, permissive())
		if err != nil {
			t.Fatalf("tail of %d bytes: %v", len(tail), err)
		}
		if len(v.Batch) != len(good) {
			t.Fatalf("tail of %d bytes kept: batch is %d bytes", len(tail), len(v.Batch))
		}
	}
}

func TestValidateProduceRecheckSizeAfterRecompression(t *testing.T) {
	data := mustBuild(t, sampleHeader(16), sampleRecords(16, 1024), CodecLZ4)
	opts := permissive()
	opts.KeepProducerCodec = false
	opts.TargetCodec = CodecNone
	opts.MaxMessageBytes = len(data) + 100
	if _, err := ValidateProduce(data, opts); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("err %v, want MESSAGE_TOO_LARGE for the decompressed batch", err)
	}
}

func TestValidateProduceLogAppendTimeBatchOnCreateTimeTopic(t *testing.T) {
	// Kafka quirk kept for fidelity: a client batch marked LogAppendTime with
	// an in-range MaxTimestamp passes on a CreateTime topic and is turned
	// back into CreateTime with MaxTimestamp as computed from the records.
	data := edit(franzBatch(t, 2, nil), true, setAttrs(attrTimestampType))
	v, err := ValidateProduce(data, permissive())
	if err != nil {
		t.Fatal(err)
	}
	if v.Header.TimestampType() != CreateTime || ComputeCRC(v.Batch) != v.Header.CRC {
		t.Fatalf("header %+v", v.Header)
	}
}

// KIP-390: when the broker recompresses to the topic's codec, it does so at
// the topic's compression.<codec>.level: the fastest and the strongest level
// give different batches, both decodable, and the default is the codec's.
func TestValidateProduceRecompressesAtTopicLevel(t *testing.T) {
	// Compressible but not trivially: words from a small vocabulary.
	var recs []Record
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	for i := range 64 {
		var v []byte
		for j := range 200 {
			v = append(v, words[(i*31+j*7+j*j)%len(words)]...)
			v = append(v, ' ')
		}
		recs = append(recs, Record{OffsetDelta: int32(i), Value: v})
	}
	for _, tc := range []struct {
		codec       Codec
		fast, heavy Level
	}{
		{CodecGzip, 1, 9},
		{CodecLZ4, 1, 17},
		{CodecZstd, -5, 22},
	} {
		sizes := map[Level]int{}
		for _, level := range []Level{tc.fast, tc.heavy} {
			opts := permissive()
			opts.KeepProducerCodec = false
			opts.TargetCodec, opts.TargetLevel = tc.codec, level
			v, err := ValidateProduce(mustBuild(t, sampleHeader(64), recs, CodecNone), opts)
			if err != nil {
				t.Fatalf("%s level %d: %v", tc.codec, level, err)
			}
			if _, dec, err := DecodeRecords(v.Batch); err != nil || len(dec) != len(recs) {
				t.Fatalf("%s level %d: undecodable (%v) or %d records", tc.codec, level, err, len(dec))
			}
			sizes[level] = len(v.Batch)
		}
		if sizes[tc.heavy] >= sizes[tc.fast] {
			t.Errorf("%s: level %d gives %d bytes, level %d %d bytes; the level is not applied", tc.codec, tc.heavy, sizes[tc.heavy], tc.fast, sizes[tc.fast])
		}
	}
}

// CheckRecord sees every record's key and value, decompressed, in every
// codec, and each record it refuses is reported by its index with
// INVALID_RECORD.
func TestValidateProduceCheckRecord(t *testing.T) {
	recs := sampleRecords(8, 64)
	recs[2].Value = []byte("refuse me")
	recs[5].Value = []byte("refuse me")
	for _, c := range allCodecs {
		data := mustBuild(t, sampleHeader(8), recs, c)
		opts := permissive()
		var seen int
		opts.CheckRecord = func(key, value []byte) string {
			if !bytes.Equal(value, recs[seen].Value) || !bytes.Equal(key, recs[seen].Key) {
				t.Fatalf("%s: record %d checked with value %q, want %q", c, seen, value, recs[seen].Value)
			}
			seen++
			if string(value) == "refuse me" {
				return "refused by the check"
			}
			return ""
		}
		_, err := ValidateProduce(data, opts)
		var rv *RecordValidationError
		if !errors.As(err, &rv) || rv.Code != kerr.InvalidRecord {
			t.Fatalf("%s: %v, want INVALID_RECORD record errors", c, err)
		}
		if seen != len(recs) || len(rv.Records) != 2 || rv.Records[0].BatchIndex != 2 || rv.Records[1].BatchIndex != 5 ||
			rv.Records[0].Message != "refused by the check" {
			t.Fatalf("%s: %d records checked, refused %+v", c, seen, rv.Records)
		}
	}
}

// With KeepBaseOffset (an offset-preserving mirror's target topic) a
// produced batch may carry any non-negative base offset, and a batch
// rebuilt into the topic's codec keeps it.
func TestValidateProduceKeepBaseOffset(t *testing.T) {
	opts := permissive()
	opts.KeepBaseOffset = true
	for _, target := range []Codec{CodecNone, CodecLZ4} {
		opts.KeepProducerCodec, opts.TargetCodec = false, target
		h := sampleHeader(3)
		h.BaseOffset = 1234
		v, err := ValidateProduce(mustBuild(t, h, sampleRecords(3, 20), CodecNone), opts)
		if err != nil {
			t.Fatalf("to %s: %v", target, err)
		}
		if v.Header.BaseOffset != 1234 || v.Recompressed != (target != CodecNone) {
			t.Fatalf("to %s: base offset %d, recompressed %v; want 1234 kept", target, v.Header.BaseOffset, v.Recompressed)
		}
		if got, _ := ParseHeader(v.Batch); got.BaseOffset != 1234 {
			t.Fatalf("to %s: the batch says base offset %d", target, got.BaseOffset)
		}
	}
	h := sampleHeader(1)
	h.BaseOffset = -3
	if _, err := ValidateProduce(mustBuild(t, h, sampleRecords(1, 20), CodecNone), opts); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("negative base offset: %v, want INVALID_RECORD", err)
	}
}
