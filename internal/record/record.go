package record

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Record is one decoded v2 record. Its on-wire form (KIP-98) is
//
//	length varint, attributes int8, timestampDelta varlong,
//	offsetDelta varint, keyLength varint, key, valueLength varint, value,
//	headerCount varint, then per header: keyLength varint, key,
//	valueLength varint, value
//
// where every varint is zig-zag encoded and a length of -1 means null.
// Key and Value from DecodeRecords alias the decoded buffer; copy them to
// keep them beyond the buffer's life.
type Record struct {
	Attributes     int8 // unused by Kafka today; writers put 0
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte // nil = null key
	Value          []byte // nil = null value (a tombstone on compacted topics)
	Headers        []RecordHeader
}

// RecordHeader is one record header (KIP-82). Header keys cannot be null.
type RecordHeader struct {
	Key   string
	Value []byte // nil = null
}

// errRecord wraps kerr.InvalidRecord, the code Kafka's DefaultRecord.readFrom
// produces (InvalidRecordException) for malformed record framing.
func errRecord(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{kerr.InvalidRecord}, args...)...)
}

// maxVarint32Len is the longest varint Kafka's ByteUtils.readVarint accepts.
const maxVarint32Len = 5

// readVarint32 decodes a zig-zag varint that must fit an int32, returning
// n <= 0 if b is short or the varint malformed.
func readVarint32(b []byte) (int32, int) {
	v, n := binary.Varint(b)
	if n <= 0 || n > maxVarint32Len || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, -1
	}
	return int32(v), n
}

// readVarint64 decodes a zig-zag varlong, returning n <= 0 on error.
func readVarint64(b []byte) (int64, int) {
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, -1
	}
	return v, n
}

// varintLen is the encoded size of v as a zig-zag varint.
func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// readBytesField reads a varint length and that many bytes. A negative
// length is null (Kafka's Utils.readBytes treats any negative size so).
func readBytesField(b []byte, what string) (field []byte, n int, err error) {
	l, n := readVarint32(b)
	if n <= 0 {
		return nil, 0, errRecord("malformed %s length varint", what)
	}
	if l < 0 {
		return nil, n, nil
	}
	if int(l) > len(b)-n {
		return nil, 0, errRecord("%s length %d exceeds the %d bytes left in the record", what, l, len(b)-n)
	}
	return b[n : n+int(l) : n+int(l)], n + int(l), nil
}

// parseRecord reads one record from the start of b, returning it and the
// number of bytes consumed. Key and Value alias b. Headers are appended to
// hdrs and returned in the record only when keepHeaders is set; otherwise
// they are checked and skipped without allocating.
//
// The checks mirror Kafka's DefaultRecord.readFrom: the body must fit in b,
// header count and header key lengths must not be negative, and the fields
// must consume exactly the declared body length.
func parseRecord(b []byte, keepHeaders bool, hdrs []RecordHeader) (Record, int, error) {
	bodyLen, n := readVarint32(b)
	if n <= 0 {
		return Record{}, 0, errRecord("malformed record length varint")
	}
	if bodyLen < 0 || int(bodyLen) > len(b)-n {
		return Record{}, 0, errRecord("record length %d exceeds the %d bytes left in the batch", bodyLen, len(b)-n)
	}
	body := b[n : n+int(bodyLen)]
	total := n + int(bodyLen)

	var r Record
	if len(body) < 1 {
		return Record{}, 0, errRecord("empty record body")
	}
	r.Attributes = int8(body[0])
	p := 1
	ts, m := readVarint64(body[p:])
	if m <= 0 {
		return Record{}, 0, errRecord("malformed timestamp delta")
	}
	r.TimestampDelta = ts
	p += m
	od, m := readVarint32(body[p:])
	if m <= 0 {
		return Record{}, 0, errRecord("malformed offset delta")
	}
	r.OffsetDelta = od
	p += m
	key, m, err := readBytesField(body[p:], "key")
	if err != nil {
		return Record{}, 0, err
	}
	r.Key = key
	p += m
	val, m, err := readBytesField(body[p:], "value")
	if err != nil {
		return Record{}, 0, err
	}
	r.Value = val
	p += m
	count, m := readVarint32(body[p:])
	if m <= 0 {
		return Record{}, 0, errRecord("malformed header count")
	}
	p += m
	if count < 0 || int(count) > len(body)-p {
		return Record{}, 0, errRecord("invalid number of record headers %d", count)
	}
	for range count {
		hk, m, err := readBytesField(body[p:], "header key")
		if err != nil {
			return Record{}, 0, err
		}
		if hk == nil {
			return Record{}, 0, errRecord("negative header key length")
		}
		p += m
		hv, m, err := readBytesField(body[p:], "header value")
		if err != nil {
			return Record{}, 0, err
		}
		p += m
		if keepHeaders {
			hdrs = append(hdrs, RecordHeader{Key: string(hk), Value: hv})
		}
	}
	if p != len(body) {
		return Record{}, 0, errRecord("record declares %d body bytes but its fields use %d", len(body), p)
	}
	if keepHeaders {
		r.Headers = hdrs
	}
	return r, total, nil
}

// recordBodyLen is the encoded size of r without its leading length varint.
func recordBodyLen(r *Record) int {
	n := 1 + varintLen(r.TimestampDelta) + varintLen(int64(r.OffsetDelta))
	n += bytesFieldLen(r.Key) + bytesFieldLen(r.Value)
	n += varintLen(int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		n += varintLen(int64(len(h.Key))) + len(h.Key) + bytesFieldLen(h.Value)
	}
	return n
}

func bytesFieldLen(b []byte) int {
	if b == nil {
		return varintLen(-1)
	}
	return varintLen(int64(len(b))) + len(b)
}

func appendBytesField(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// appendRecord appends r's wire form to dst.
func appendRecord(dst []byte, r *Record) []byte {
	dst = binary.AppendVarint(dst, int64(recordBodyLen(r)))
	dst = append(dst, byte(r.Attributes))
	dst = binary.AppendVarint(dst, r.TimestampDelta)
	dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
	dst = appendBytesField(dst, r.Key)
	dst = appendBytesField(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		dst = binary.AppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendBytesField(dst, h.Value)
	}
	return dst
}

// EncodedLen is the bytes r takes in an uncompressed batch, its length
// prefix included.
func EncodedLen(r *Record) int {
	body := recordBodyLen(r)
	return varintLen(int64(body)) + body
}
