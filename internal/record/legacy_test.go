package record

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// legacyMsg appends one legacy message (offset 0) to dst.
func legacyMsg(dst []byte, magic, attrs int8, ts int64, key, value []byte) []byte {
	var body []byte
	if magic == 0 {
		m := kmsg.MessageV0{Magic: 0, Attributes: attrs, Key: key, Value: value}
		body = m.AppendTo(nil)
	} else {
		m := kmsg.MessageV1{Magic: 1, Attributes: attrs, Timestamp: ts, Key: key, Value: value}
		body = m.AppendTo(nil)
	}
	binary.BigEndian.PutUint32(body[8:], uint32(len(body)-12))
	binary.BigEndian.PutUint32(body[12:], crc32.ChecksumIEEE(body[16:]))
	return append(dst, body...)
}

func TestUpConvertLegacy(t *testing.T) {
	var set0 []byte
	set0 = legacyMsg(set0, 0, 0, 0, []byte("k0"), []byte("v0"))
	set0 = legacyMsg(set0, 0, 0, 0, nil, []byte("v1"))
	set1 := legacyMsg(nil, 1, 0, 1000, []byte("k"), nil)
	set1 = legacyMsg(set1, 1, 0, 3000, nil, []byte("later"))
	inner := legacyMsg(nil, 1, 0, 5000, []byte("a"), []byte("1"))
	inner = legacyMsg(inner, 1, 0, 6000, []byte("b"), []byte("2"))
	gz, err := compress(nil, CodecGzip, DefaultLevel, inner)
	if err != nil {
		t.Fatal(err)
	}
	wrapper := legacyMsg(nil, 1, int8(CodecGzip), 6000, nil, gz)

	for _, tt := range []struct {
		name   string
		data   []byte
		codec  Codec
		keys   []string
		values []string
		ts     []int64
	}{
		{"magic 0", set0, CodecNone, []string{"k0", "<nil>"}, []string{"v0", "v1"}, []int64{-1, -1}},
		{"magic 1", set1, CodecNone, []string{"k", "<nil>"}, []string{"<nil>", "later"}, []int64{1000, 3000}},
		{"magic 1 gzip wrapper", wrapper, CodecGzip, []string{"a", "b"}, []string{"1", "2"}, []int64{5000, 6000}},
		{"partial trailing message dropped", append(set1[:len(set1):len(set1)], set0[:20]...), CodecNone, []string{"k", "<nil>"}, []string{"<nil>", "later"}, []int64{1000, 3000}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := UpConvertLegacy(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			h, recs, err := DecodeRecords(b)
			if err != nil {
				t.Fatal(err)
			}
			if h.Codec() != tt.codec || h.ProducerID != -1 || ComputeCRC(b) != h.CRC || len(recs) != len(tt.keys) {
				t.Fatalf("header %+v, %d records", h, len(recs))
			}
			str := func(b []byte) string {
				if b == nil {
					return "<nil>"
				}
				return string(b)
			}
			for i, r := range recs {
				if str(r.Key) != tt.keys[i] || str(r.Value) != tt.values[i] || h.FirstTimestamp+r.TimestampDelta != tt.ts[i] || r.OffsetDelta != int32(i) {
					t.Errorf("record %d: key %s value %s ts %d", i, str(r.Key), str(r.Value), h.FirstTimestamp+r.TimestampDelta)
				}
			}
			if _, err := ValidateProduce(b, ValidateOptions{TimestampType: CreateTime, TimestampBeforeMaxMs: 1 << 62, TimestampAfterMaxMs: 1 << 62, KeepProducerCodec: true}); err != nil {
				t.Errorf("converted batch fails validation: %v", err)
			}
		})
	}

	if b, err := UpConvertLegacy(set0[:10]); b != nil || err != nil {
		t.Errorf("no complete message: %v %v, want nothing", b, err)
	}
	corrupt := append([]byte(nil), set0...)
	corrupt[len(corrupt)-1] ^= 1
	badInner := append([]byte(nil), inner...)
	badInner[len(badInner)-1] ^= 1
	gzBad, _ := compress(nil, CodecGzip, DefaultLevel, badInner)
	nested, _ := compress(nil, CodecGzip, DefaultLevel, wrapper)
	for _, tt := range []struct {
		name    string
		data    []byte
		want    error
		indexes []int32
	}{
		{"crc mismatch", corrupt, kerr.CorruptMessage, nil},
		{"zstd", legacyMsg(nil, 1, int8(CodecZstd), 0, nil, []byte("x")), kerr.UnsupportedCompressionType, nil},
		{"undecodable gzip", legacyMsg(nil, 1, int8(CodecGzip), 0, nil, []byte("not gzip")), kerr.CorruptMessage, nil},
		{"size below the overhead", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 1, 2, 3, 4, 0}, kerr.CorruptMessage, nil},
		{"inner crc mismatch", legacyMsg(nil, 1, int8(CodecGzip), 0, nil, gzBad), kerr.InvalidRecord, []int32{1}},
		{"inner message compressed again", legacyMsg(nil, 1, int8(CodecGzip), 0, nil, nested), kerr.InvalidRecord, []int32{0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := UpConvertLegacy(tt.data)
			if !errors.Is(err, tt.want) {
				t.Fatalf("%v, want %v", err, tt.want)
			}
			var rve *RecordValidationError
			if tt.indexes != nil {
				if !errors.As(err, &rve) || len(rve.Records) != len(tt.indexes) || rve.Records[0].BatchIndex != tt.indexes[0] {
					t.Errorf("record errors %+v, want indexes %v", rve, tt.indexes)
				}
			}
		})
	}
}

// FuzzUpConvertLegacy: any bytes either convert to a batch that
// ValidateProduce's framing accepts or fail with a Kafka error; never a
// panic.
func FuzzUpConvertLegacy(f *testing.F) {
	f.Add(legacyMsg(nil, 0, 0, 0, []byte("k"), []byte("v")))
	f.Add(legacyMsg(legacyMsg(nil, 1, 0, 7, nil, []byte("a")), 1, 0, 8, []byte("b"), nil))
	inner := legacyMsg(nil, 1, 0, 5, []byte("a"), []byte("1"))
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4} {
		z, err := compress(nil, c, DefaultLevel, inner)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(legacyMsg(nil, 1, int8(c), 5, nil, z))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := UpConvertLegacy(data)
		if err != nil {
			var kErr *kerr.Error
			if !errors.As(err, &kErr) {
				t.Fatalf("error without a Kafka code: %v", err)
			}
			return
		}
		if b == nil || len(data) > offMagic && int8(data[offMagic]) == currentMagic {
			return
		}
		if _, _, err := DecodeRecords(b); err != nil {
			t.Fatalf("converted batch does not decode: %v", err)
		}
	})
}
