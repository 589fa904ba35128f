package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// testNow is the broker clock used by tests.
const testNow = int64(1_700_000_000_000)

// franzBatch encodes an uncompressed batch with franz-go's kmsg types, an
// encoder independent of this package, so tests check interoperability
// rather than our own encoder against itself. Timestamps are testNow plus
// the record index; offset deltas are 0..n-1.
func franzBatch(t testing.TB, n int, mutate func(*kmsg.RecordBatch)) []byte {
	t.Helper()
	var raw []byte
	for i := range n {
		r := kmsg.Record{
			TimestampDelta64: int64(i),
			OffsetDelta:      int32(i),
			Key:              fmt.Appendf(nil, "key-%d", i),
			Value:            fmt.Appendf(nil, "value-%d", i),
			Headers:          []kmsg.Header{{Key: "h", Value: []byte("v")}},
		}
		body := r.AppendTo(nil)
		_, skip := binary.Varint(body) // Length 0 placeholder is one byte
		r.Length = int32(len(body) - skip)
		raw = r.AppendTo(raw)
	}
	b := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(n - 1),
		FirstTimestamp:       testNow,
		MaxTimestamp:         testNow + int64(n-1),
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(n),
		Records:              raw,
	}
	if mutate != nil {
		mutate(&b)
	}
	b.Length = int32(BatchHeaderSize - 12 + len(b.Records))
	out := b.AppendTo(nil)
	fixCRC(out)
	return out
}

// fixCRC recomputes the stored CRC with the standard library, independent
// of ComputeCRC.
func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
}

// sampleRecords returns n records with distinctive contents, including a
// null key, a null value and headers.
func sampleRecords(n, valueSize int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		v := make([]byte, valueSize)
		for j := range v {
			v[j] = byte('a' + (i+j)%7)
		}
		recs[i] = Record{
			TimestampDelta: int64(i * 3),
			OffsetDelta:    int32(i),
			Key:            fmt.Appendf(nil, "key-%d", i),
			Value:          v,
			Headers:        []RecordHeader{{Key: "trace", Value: []byte{byte(i)}}, {Key: "nil"}},
		}
	}
	if n > 1 {
		recs[1].Key = nil
		recs[1].Value = nil
	}
	return recs
}

// sampleHeader is a plain producer header for n records.
func sampleHeader(n int) Header {
	return Header{
		PartitionLeaderEpoch: -1,
		LastOffsetDelta:      int32(n - 1),
		FirstTimestamp:       testNow,
		MaxTimestamp:         testNow + int64(3*(n-1)),
		ProducerID:           -1,
		ProducerEpoch:        -1,
		BaseSequence:         -1,
	}
}

func mustBuild(t testing.TB, h Header, recs []Record, c Codec) []byte {
	t.Helper()
	b, err := BuildBatch(h, recs, c)
	if err != nil {
		t.Fatalf("BuildBatch(%s): %v", c, err)
	}
	return b
}

// permissive accepts anything a well-formed batch contains.
func permissive() ValidateOptions {
	return ValidateOptions{
		MaxMessageBytes:      1 << 20,
		TimestampBeforeMaxMs: 1<<63 - 1,
		TimestampAfterMaxMs:  1<<63 - 1,
		Now:                  testNow,
		KeepProducerCodec:    true,
	}
}

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}
