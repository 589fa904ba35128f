package record

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// minRecordLen is the smallest possible encoded record: a one-byte length
// and six one-byte fields (attributes, timestamp delta, offset delta, null
// key, null value, zero headers). It bounds allocations driven by a
// batch's claimed record count.
const minRecordLen = 7

// checkFraming verifies that batch begins with a whole v2 batch and returns
// its header and exact bytes.
func checkFraming(batch []byte) (Header, []byte, error) {
	h, err := ParseHeader(batch)
	if err != nil {
		return Header{}, nil, err
	}
	if h.Magic != currentMagic {
		return Header{}, nil, fmt.Errorf("%w: record batch magic %d, want 2", kerr.CorruptMessage, h.Magic)
	}
	if h.Length < minV2BatchLength || h.TotalSize() > len(batch) {
		return Header{}, nil, fmt.Errorf("%w: batch length %d inconsistent with %d available bytes", kerr.CorruptMessage, h.Length, len(batch))
	}
	if h.NumRecords < 0 {
		return Header{}, nil, errRecord("negative record count %d", h.NumRecords)
	}
	return h, batch[:h.TotalSize()], nil
}

// recordsPayload returns the batch's records as uncompressed bytes: the
// batch's own bytes when uncompressed, else a decompression appended to dst.
func recordsPayload(dst []byte, h Header, batch []byte) ([]byte, error) {
	payload := batch[BatchHeaderSize:]
	c := h.Codec()
	if c == CodecNone {
		return payload, nil
	}
	if !c.valid() {
		return nil, errUnknownCodec(c)
	}
	if h.NumRecords == 0 && len(payload) == 0 {
		return dst, nil // an emptied batch (e.g. by compaction) may carry no codec stream
	}
	return decompress(dst, c, payload)
}

// DecodeRecords decodes every record of one v2 batch, decompressing per the
// codec bits. The CRC is not verified (validation does that on the way in).
// Framing errors wrap kerr.InvalidRecord, as Kafka's record iterator reports
// them; a bad length or magic wraps kerr.CorruptMessage. Keys and values
// alias batch for uncompressed batches and a fresh buffer otherwise.
func DecodeRecords(batch []byte) (Header, []Record, error) {
	h, batch, err := checkFraming(batch)
	if err != nil {
		return Header{}, nil, err
	}
	payload, err := recordsPayload(nil, h, batch)
	if err != nil {
		return Header{}, nil, err
	}
	recs := make([]Record, 0, min(int(h.NumRecords), len(payload)/minRecordLen))
	for i := int32(0); i < h.NumRecords; i++ {
		r, n, err := parseRecord(payload, true, nil)
		if err != nil {
			return Header{}, nil, fmt.Errorf("record %d: %w", i, err)
		}
		recs = append(recs, r)
		payload = payload[n:]
	}
	if len(payload) != 0 {
		return Header{}, nil, errRecord("%d bytes remain after the batch's %d records", len(payload), h.NumRecords)
	}
	return h, recs, nil
}

// BuildBatch encodes records into a v2 batch whose header is h with Magic,
// Length, NumRecords, the codec bits of Attributes and CRC filled in. The
// other attribute bits and all other fields (LastOffsetDelta, timestamps,
// producer fields, ...) are written as given: the caller owns their meaning.
func BuildBatch(h Header, records []Record, codec Codec) ([]byte, error) {
	return BuildBatchLevel(h, records, codec, DefaultLevel)
}

// BuildBatchLevel is BuildBatch compressing at the given level (the
// topic's compression.<codec>.level when the broker recompresses).
func BuildBatchLevel(h Header, records []Record, codec Codec, level Level) ([]byte, error) {
	if !codec.valid() {
		return nil, errUnknownCodec(codec)
	}
	if len(records) > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %d records in one batch", kerr.MessageTooLarge, len(records))
	}
	rawLen := 0
	for i := range records {
		body := recordBodyLen(&records[i])
		rawLen += varintLen(int64(body)) + body
	}

	var out []byte
	if codec == CodecNone {
		out = make([]byte, BatchHeaderSize, BatchHeaderSize+rawLen)
		for i := range records {
			out = appendRecord(out, &records[i])
		}
	} else {
		scratch := getBuffer()
		raw := (*scratch)[:0]
		for i := range records {
			raw = appendRecord(raw, &records[i])
		}
		out = make([]byte, BatchHeaderSize, BatchHeaderSize+rawLen/2+64)
		var err error
		out, err = compress(out, codec, level, raw)
		*scratch = raw
		putBuffer(scratch)
		if err != nil {
			return nil, fmt.Errorf("%s compression: %w", codec, err)
		}
	}
	if len(out)-LengthFieldEnd > math.MaxInt32 {
		return nil, fmt.Errorf("%w: batch of %d bytes", kerr.MessageTooLarge, len(out))
	}

	h.Magic = currentMagic
	h.Attributes = h.Attributes&^attrCodecMask | int16(codec)
	h.NumRecords = int32(len(records))
	h.Length = int32(len(out) - LengthFieldEnd)
	h.CRC = 0
	appendHeader(out[:0], h)
	binary.BigEndian.PutUint32(out[offCRC:], ComputeCRC(out))
	return out, nil
}

// Recompress decodes batch and re-encodes it with codec, keeping every
// header field and every record field (offset and timestamp deltas,
// attributes, headers) as they were; only Length, the codec bits and the
// CRC change.
func Recompress(batch []byte, codec Codec) ([]byte, error) {
	h, recs, err := DecodeRecords(batch)
	if err != nil {
		return nil, err
	}
	return BuildBatch(h, recs, codec)
}
