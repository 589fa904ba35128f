package storage

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/vltava/vltava/internal/record"
)

// The v2 batch format itself (header layout, CRC-32C over attributes..end,
// the fields the broker may rewrite in place) lives in internal/record. What
// remains here is what only the storage layer needs: the sanity checks that
// make a header safe to walk the log by, and a CRC check on a stored batch.

// crcOffset is where a v2 batch stores its CRC (record's header layout).
const crcOffset = 17

// parseStoredHeader decodes the batch header at the start of b and checks
// what walking a segment needs: magic 2, a length that covers the header and
// a non-negative last offset delta (an offset range must not run backwards,
// or the offset index and findBatch would loop or misplace batches). Errors
// wrap kerr.CorruptMessage. The CRC is not verified (see verifyBatchCRC).
func parseStoredHeader(b []byte) (record.Header, error) {
	h, err := record.ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Magic != 2 {
		return h, fmt.Errorf("%w: unsupported batch magic %d", kerr.CorruptMessage, h.Magic)
	}
	if h.Length < record.BatchHeaderSize-record.LengthFieldEnd {
		return h, fmt.Errorf("%w: batch length %d smaller than the header", kerr.CorruptMessage, h.Length)
	}
	if h.LastOffsetDelta < 0 {
		return h, fmt.Errorf("%w: negative last offset delta %d", kerr.CorruptMessage, h.LastOffsetDelta)
	}
	return h, nil
}

// verifyBatchCRC checks the CRC-32C stored in one whole batch, as Kafka's
// LogSegment.recover does through RecordBatch.ensureValid.
func verifyBatchCRC(batch []byte) error {
	want := binary.BigEndian.Uint32(batch[crcOffset:])
	if got := record.ComputeCRC(batch); got != want {
		return fmt.Errorf("%w: batch CRC mismatch (stored %08x, computed %08x)", kerr.CorruptMessage, want, got)
	}
	return nil
}
