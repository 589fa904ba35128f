// Package record implements Kafka's v2 record-batch format (KIP-98), the unit
// that travels in Produce and Fetch payloads and that the broker stores on
// disk byte for byte.
//
// A v2 batch is a fixed 61-byte header followed by NumRecords records, which
// are compressed as one block when the codec bits of the attributes are set:
//
//	offset size field
//	     0    8 baseOffset            int64, big endian
//	     8    4 batchLength           int32, bytes after this field
//	    12    4 partitionLeaderEpoch  int32
//	    16    1 magic                 int8 (2)
//	    17    4 crc                   uint32, CRC-32C of bytes 21..end
//	    21    2 attributes            int16
//	    23    4 lastOffsetDelta       int32
//	    27    8 firstTimestamp        int64 (delete horizon when bit 6 is set)
//	    35    8 maxTimestamp          int64
//	    43    8 producerId            int64
//	    51    2 producerEpoch         int16
//	    53    4 baseSequence          int32
//	    57    4 recordCount           int32
//	    61    - records
//
// Everything in this package is stateless and safe for concurrent use; the
// codec pools are internally synchronised.
package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// BatchHeaderSize is the size of the v2 batch header: the bytes from
// baseOffset through recordCount.
const BatchHeaderSize = 61

// LengthFieldEnd is the number of bytes preceding a batch's length-counted
// body (baseOffset + batchLength); Kafka calls this LOG_OVERHEAD.
const LengthFieldEnd = 12

// Byte offsets of the header fields within a batch.
const (
	offBaseOffset           = 0
	offLength               = 8
	offPartitionLeaderEpoch = 12
	offMagic                = 16
	offCRC                  = 17
	offAttributes           = 21
	offLastOffsetDelta      = 23
	offFirstTimestamp       = 27
	offMaxTimestamp         = 35
	offProducerID           = 43
	offProducerEpoch        = 51
	offBaseSequence         = 53
	offNumRecords           = 57
)

// Attribute bits of a v2 batch.
const (
	attrCodecMask      = 0x07
	attrTimestampType  = 0x08
	attrTransactional  = 0x10
	attrControl        = 0x20
	attrDeleteHorizon  = 0x40
	currentMagic       = 2
	minV2BatchLength   = BatchHeaderSize - LengthFieldEnd
	noSequence         = -1
	noTimestamp        = -1
	legacyMinRecordLen = 14 // Kafka's LegacyRecord.RECORD_OVERHEAD_V0
)

// Codec is the compression codec stored in attribute bits 0-2.
type Codec int8

// The codecs Kafka defines; ids are the on-wire attribute values.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// String returns the codec's name as Kafka's compression.type spells it.
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// valid reports whether c is a codec Kafka defines.
func (c Codec) valid() bool { return c >= CodecNone && c <= CodecZstd }

// TimestampType is attribute bit 3: who assigned the batch's timestamps.
type TimestampType int8

// Timestamp types; the values match Kafka's TimestampType ids.
const (
	CreateTime    TimestampType = 0
	LogAppendTime TimestampType = 1
)

// String returns Kafka's name for the timestamp type.
func (t TimestampType) String() string {
	if t == LogAppendTime {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// Header is the fixed 61-byte v2 batch header, decoded. It is a plain value;
// editing it does not change any bytes (use BuildBatch or the Set functions).
type Header struct {
	BaseOffset           int64
	Length               int32 // batchLength: bytes after the Length field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// ErrShortHeader is returned by ParseHeader for fewer than BatchHeaderSize
// bytes. It wraps kerr.CorruptMessage.
var ErrShortHeader = fmt.Errorf("%w: record batch shorter than the %d-byte v2 header", kerr.CorruptMessage, BatchHeaderSize)

// ParseHeader decodes the header at the start of b. It needs at least
// BatchHeaderSize bytes and checks neither the magic nor the CRC: callers that
// need a trustworthy batch use ValidateProduce or check CRC themselves.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < BatchHeaderSize {
		return Header{}, ErrShortHeader
	}
	b = b[:BatchHeaderSize]
	return Header{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		Length:               int32(binary.BigEndian.Uint32(b[offLength:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[offPartitionLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  binary.BigEndian.Uint32(b[offCRC:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		FirstTimestamp:       int64(binary.BigEndian.Uint64(b[offFirstTimestamp:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[offNumRecords:])),
	}, nil
}

// appendHeader appends h's 61 bytes to dst exactly as given (no field is
// derived here).
func appendHeader(dst []byte, h Header) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.BaseOffset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.Length))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.PartitionLeaderEpoch))
	dst = append(dst, byte(h.Magic))
	dst = binary.BigEndian.AppendUint32(dst, h.CRC)
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.Attributes))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.LastOffsetDelta))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.FirstTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.MaxTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.ProducerID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.ProducerEpoch))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.BaseSequence))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.NumRecords))
	return dst
}

// Codec returns the compression codec from attribute bits 0-2. Values 5-7
// are returned as is; they are invalid and rejected by validation.
func (h Header) Codec() Codec { return Codec(h.Attributes & attrCodecMask) }

// TimestampType returns attribute bit 3.
func (h Header) TimestampType() TimestampType {
	if h.Attributes&attrTimestampType != 0 {
		return LogAppendTime
	}
	return CreateTime
}

// IsTransactional reports attribute bit 4 (KIP-98).
func (h Header) IsTransactional() bool { return h.Attributes&attrTransactional != 0 }

// IsControl reports attribute bit 5: the batch holds a transaction marker.
func (h Header) IsControl() bool { return h.Attributes&attrControl != 0 }

// HasDeleteHorizon reports attribute bit 6 (KIP-534): FirstTimestamp holds
// the delete horizon set by the log cleaner.
func (h Header) HasDeleteHorizon() bool { return h.Attributes&attrDeleteHorizon != 0 }

// LastOffset is the offset of the batch's last record.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// LastSequence is the sequence number of the batch's last record. Sequences
// wrap from MaxInt32 to 0, as Kafka's DefaultRecordBatch.incrementSequence
// does; a batch without sequence (-1) has last sequence -1.
func (h Header) LastSequence() int32 { return h.SequenceAt(h.LastOffsetDelta) }

// SequenceAt is the sequence number of the record at offsetDelta, wrapping
// like LastSequence (Kafka's DefaultRecord.sequence); -1 without sequence.
func (h Header) SequenceAt(offsetDelta int32) int32 {
	if h.BaseSequence == noSequence {
		return noSequence
	}
	return incrementSequence(h.BaseSequence, offsetDelta)
}

// incrementSequence adds delta to seq, wrapping past MaxInt32 to 0.
func incrementSequence(seq, delta int32) int32 {
	if seq > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - seq) - 1
	}
	return seq + delta
}

// TotalSize is the number of bytes the whole batch occupies.
func (h Header) TotalSize() int { return LengthFieldEnd + int(h.Length) }

// IsIdempotent reports whether the batch carries a producer id (KIP-98).
func (h Header) IsIdempotent() bool { return h.ProducerID >= 0 }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ComputeCRC returns the CRC-32C (Castagnoli) of batch's bytes from the
// attributes field to the end, the checksum v2 stores at offset 17. batch
// must hold at least the header; the length field is not consulted, so pass
// exactly one batch.
func ComputeCRC(batch []byte) uint32 {
	if len(batch) < offAttributes {
		return 0
	}
	return crc32.Checksum(batch[offAttributes:], castagnoli)
}

// SetBaseOffset overwrites the batch's base offset. The CRC does not cover
// it, so the batch stays valid; this is how the log assigns offsets.
func SetBaseOffset(batch []byte, offset int64) {
	binary.BigEndian.PutUint64(batch[offBaseOffset:], uint64(offset))
}

// SetPartitionLeaderEpoch overwrites the partition leader epoch, which the
// CRC does not cover (KIP-101).
func SetPartitionLeaderEpoch(batch []byte, epoch int32) {
	binary.BigEndian.PutUint32(batch[offPartitionLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime marks the batch as LogAppendTime with timestamp ts and
// recomputes the CRC. Like Kafka's DefaultRecordBatch.setMaxTimestamp it
// rewrites only the attributes and MaxTimestamp: readers of a LogAppendTime
// batch take every record's timestamp from MaxTimestamp and ignore
// FirstTimestamp, which keeps its value (it may hold the KIP-534 delete
// horizon). If nothing changes the CRC is left alone, as in Kafka.
func SetLogAppendTime(batch []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(batch[offAttributes:])
	cur := int64(binary.BigEndian.Uint64(batch[offMaxTimestamp:]))
	if attrs&attrTimestampType != 0 && cur == ts {
		return
	}
	setMaxTimestamp(batch, attrs|attrTimestampType, ts)
}

// setMaxTimestamp writes attributes and MaxTimestamp and refreshes the CRC.
func setMaxTimestamp(batch []byte, attrs uint16, ts int64) {
	binary.BigEndian.PutUint16(batch[offAttributes:], attrs)
	binary.BigEndian.PutUint64(batch[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(batch[offCRC:], ComputeCRC(batch))
}
