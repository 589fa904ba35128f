package storage

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
)

// batchHeaderSize is the size of the fixed part of a Kafka v2 record batch
// (magic 2). The layout, all big-endian, is:
//
//	baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 |
//	magic int8 | crc uint32 | attributes int16 | lastOffsetDelta int32 |
//	firstTimestamp int64 | maxTimestamp int64 | producerId int64 |
//	producerEpoch int16 | baseSequence int32 | recordCount int32
//
// batchLength counts the bytes after the length field, so a batch occupies
// 12+batchLength bytes. The CRC (CRC-32C) covers attributes to the end, which
// is why the broker may rewrite baseOffset and partitionLeaderEpoch without
// recomputing it.
//
// TODO: switch to internal/record.ParseHeader once that package exists; this
// private decoder only keeps storage from blocking on it.
const batchHeaderSize = 61

const (
	logOverhead     = 12 // baseOffset + batchLength
	crcOffset       = 17
	attributesStart = 21
	magicOffset     = 16
	epochOffset     = 12

	attrTransactional = 0x10
	attrControl       = 0x20
	attrCompression   = 0x07
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// batchHeader is the decoded fixed header of one v2 record batch.
type batchHeader struct {
	BaseOffset           int64
	Length               int32
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

// parseBatchHeader decodes the header at the start of b. It checks only what
// is needed to walk the log safely: enough bytes, magic 2 and a batch length
// that can hold a header. It does not verify the CRC (see verifyBatchCRC).
func parseBatchHeader(b []byte) (batchHeader, error) {
	if len(b) < batchHeaderSize {
		return batchHeader{}, fmt.Errorf("%w: batch header needs %d bytes, have %d", kerr.CorruptMessage, batchHeaderSize, len(b))
	}
	h := batchHeader{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[0:])),
		Length:               int32(binary.BigEndian.Uint32(b[8:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[12:])),
		Magic:                int8(b[16]),
		CRC:                  binary.BigEndian.Uint32(b[17:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[21:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[23:])),
		FirstTimestamp:       int64(binary.BigEndian.Uint64(b[27:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[35:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[43:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[51:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[53:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[57:])),
	}
	if h.Magic != 2 {
		return h, fmt.Errorf("%w: unsupported batch magic %d", kerr.CorruptMessage, h.Magic)
	}
	if h.Length < batchHeaderSize-logOverhead {
		return h, fmt.Errorf("%w: batch length %d smaller than the header", kerr.CorruptMessage, h.Length)
	}
	if h.LastOffsetDelta < 0 {
		return h, fmt.Errorf("%w: negative last offset delta %d", kerr.CorruptMessage, h.LastOffsetDelta)
	}
	return h, nil
}

// LastOffset is the offset of the batch's last record.
func (h *batchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// TotalSize is the number of bytes the batch occupies in the log.
func (h *batchHeader) TotalSize() int64 { return logOverhead + int64(h.Length) }

// LastSequence is the sequence of the batch's last record, wrapping at
// MaxInt32 like Kafka's DefaultRecordBatch.lastSequence.
func (h *batchHeader) LastSequence() int32 {
	if h.BaseSequence < 0 {
		return -1
	}
	return incrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

// IsControl reports a transaction marker batch.
func (h *batchHeader) IsControl() bool { return h.Attributes&attrControl != 0 }

// IsTransactional reports a batch written inside a transaction.
func (h *batchHeader) IsTransactional() bool { return h.Attributes&attrTransactional != 0 }

// compressed reports whether the records section is compressed.
func (h *batchHeader) compressed() bool { return h.Attributes&attrCompression != 0 }

// incrementSequence adds delta to seq, wrapping past MaxInt32 to 0 as Kafka
// producers do.
func incrementSequence(seq, delta int32) int32 {
	if seq > int32(^uint32(0)>>1)-delta {
		return delta - (int32(^uint32(0)>>1) - seq) - 1
	}
	return seq + delta
}

// verifyBatchCRC checks the CRC-32C stored in a whole batch.
func verifyBatchCRC(batch []byte) error {
	want := binary.BigEndian.Uint32(batch[crcOffset:])
	if got := crc32.Checksum(batch[attributesStart:], crc32c); got != want {
		return fmt.Errorf("%w: batch CRC mismatch (stored %08x, computed %08x)", kerr.CorruptMessage, want, got)
	}
	return nil
}

// setBatchBaseOffset rewrites the base offset of a batch in place.
func setBatchBaseOffset(batch []byte, off int64) {
	binary.BigEndian.PutUint64(batch[0:], uint64(off))
}

// setBatchLeaderEpoch rewrites the partition leader epoch of a batch in place.
func setBatchLeaderEpoch(batch []byte, epoch int32) {
	binary.BigEndian.PutUint32(batch[epochOffset:], uint32(epoch))
}
