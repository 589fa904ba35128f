package record

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ValidateOptions carries the topic configuration and request context that
// produce validation needs. Field semantics follow Kafka's topic configs.
type ValidateOptions struct {
	// MaxMessageBytes is max.message.bytes: a batch larger than this (before
	// or after recompression) is MESSAGE_TOO_LARGE. Zero or less disables
	// the check.
	MaxMessageBytes int
	// TimestampType is message.timestamp.type.
	TimestampType TimestampType
	// TimestampBeforeMaxMs and TimestampAfterMaxMs are KIP-937's
	// message.timestamp.before.max.ms / after.max.ms, applied to CreateTime
	// topics only. math.MaxInt64 means unlimited; 0 means the timestamp
	// must equal Now exactly, as in Kafka.
	TimestampBeforeMaxMs, TimestampAfterMaxMs int64
	// Now is the broker's clock in ms since the epoch.
	Now int64
	// Compacted is set when cleanup.policy contains compact: every record
	// needs a non-null key.
	Compacted bool
	// TargetCodec is compression.type; KeepProducerCodec is set for its
	// "producer" value, which keeps whatever codec the client used.
	TargetCodec       Codec
	KeepProducerCodec bool
	// Partition names the topic partition ("topic-0") in error messages.
	Partition string
	// TargetLevel is the level the target codec compresses at when the
	// batch is recompressed (compression.gzip/lz4/zstd.level, KIP-390);
	// DefaultLevel, or the zero value, is the codec's default. A batch
	// kept in its producer's codec is never recompressed for a level.
	TargetLevel Level
	// CheckRecord, when set, is asked about every record's key and value
	// (nil for null) while the batch is walked, so a check of the bytes
	// (the broker's schema validation) costs no second decompression or
	// parse; a non-empty answer refuses the record with that message
	// (INVALID_RECORD, KIP-467's per-record error).
	CheckRecord func(key, value []byte) string
	// ProduceVersion is the Produce request version. Versions 3-6 may not
	// carry zstd (KIP-110); 0 means "current" and skips that check.
	ProduceVersion int16
	// KeepBaseOffset accepts any non-negative base offset and keeps it
	// through a rebuild: the topic is the target of an offset-preserving
	// mirror (vltava.preserve.offsets), whose log appends at that offset.
	// Otherwise a produced batch's base offset must be 0, as in Kafka.
	KeepBaseOffset bool
}

// Validated is an accepted produce batch.
type Validated struct {
	// Batch is the batch to append. When not Recompressed it aliases the
	// request bytes (trimmed of any partial trailing batch); otherwise it is
	// a new buffer. Its base offset is 0 until the log assigns one (or the
	// producer's, with KeepBaseOffset).
	Batch []byte
	// Header is Batch's header.
	Header Header
	// Recompressed is set when Batch was rebuilt: a different target codec,
	// or a compressed batch whose offset deltas were not 0..n-1.
	Recompressed bool
}

func errInvalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{kerr.InvalidRecord}, args...)...)
}

func errCorrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{kerr.CorruptMessage}, args...)...)
}

// batchProbe mirrors Kafka's ByteBufferLogInputStream.nextBatchSize: it
// reports the total size of the batch at the start of b, 0 when b is too
// short to hold it (Kafka's iterator simply ends there), or an error for a
// size or magic that no batch can have.
func batchProbe(b []byte) (int, error) {
	if len(b) < LengthFieldEnd {
		return 0, nil
	}
	length := int32(binary.BigEndian.Uint32(b[offLength:]))
	if length < legacyMinRecordLen {
		return 0, errCorrupt("record size %d is less than the minimum record overhead %d", length, legacyMinRecordLen)
	}
	if len(b) <= offMagic {
		return 0, nil
	}
	if m := int8(b[offMagic]); m < 0 || m > currentMagic {
		return 0, errCorrupt("invalid magic %d found in record", m)
	}
	total := LengthFieldEnd + int(length)
	if len(b) < total {
		return 0, nil
	}
	return total, nil
}

// ValidateProduce validates one partition's records from a Produce request
// (v3 or later) the way Kafka's broker does: ProduceRequest.validateRecords,
// then UnifiedLog.analyzeAndValidateRecords, then LogValidator for magic 2.
// Errors wrap the kerr error Kafka would answer with:
//
//   - no complete batch, magic 0/1, a second batch, a base offset other
//     than 0, a control batch, a bad offset range or count, an idempotent
//     batch without sequence, malformed records, or (Compacted) a null key:
//     INVALID_RECORD
//   - impossible size or magic, a CRC mismatch, an undecodable compressed
//     payload: CORRUPT_MESSAGE
//   - larger than MaxMessageBytes: MESSAGE_TOO_LARGE
//   - a timestamp outside KIP-937's window, or a client claiming
//     LogAppendTime: INVALID_TIMESTAMP
//   - zstd in Produce v3-6, or an undefined codec: UNSUPPORTED_COMPRESSION_TYPE
//
// Per-record failures (timestamps, a compacted topic's null keys) come as a
// *RecordValidationError listing every refused record (KIP-467).
//
// Bytes after the batch that do not form a whole batch are dropped, as
// Kafka's log trims them. For CreateTime topics the batch's MaxTimestamp is
// set to its records' true maximum (rewriting attributes, MaxTimestamp and
// CRC in data when they differ), as Kafka does in place; LogAppendTime
// stamping, the leader epoch and the base offset are left to the caller.
//
// Every record is walked, compressed or not, because Kafka checks each
// record's framing, count and timestamp; the walk does not allocate and
// compressed payloads are decompressed into a pooled buffer.
func ValidateProduce(data []byte, opts ValidateOptions) (Validated, error) {
	// ProduceRequest.validateRecords: exactly one v2 batch.
	total, err := batchProbe(data)
	if err != nil {
		return Validated{}, err
	}
	if total == 0 {
		return Validated{}, errInvalid("produce request must have at least one complete record batch per partition")
	}
	if m := int8(data[offMagic]); m != currentMagic {
		return Validated{}, errInvalid("produce requests v3+ may only contain record batches with magic 2, not %d", m)
	}
	batch := data[:total:total]
	if len(batch) < BatchHeaderSize {
		// Too short to be valid; Kafka's isValid() fails on the overhead.
		return Validated{}, errCorrupt("record batch size %d is smaller than the minimum %d", len(batch), BatchHeaderSize)
	}
	h, _ := ParseHeader(batch)
	codec := h.Codec()
	if !codec.valid() {
		return Validated{}, errUnknownCodec(codec)
	}
	if codec == CodecZstd && opts.ProduceVersion > 0 && opts.ProduceVersion < 7 {
		return Validated{}, fmt.Errorf("%w: produce requests v%d may not use zstd", kerr.UnsupportedCompressionType, opts.ProduceVersion)
	}
	if next, err := batchProbe(data[total:]); err != nil {
		return Validated{}, err
	} else if next > 0 {
		return Validated{}, errInvalid("produce requests v3+ may contain exactly one record batch per partition")
	}

	// UnifiedLog.analyzeAndValidateRecords.
	if opts.KeepBaseOffset {
		if h.BaseOffset < 0 {
			return Validated{}, errInvalid("the base offset of a record batch must not be negative, not %d", h.BaseOffset)
		}
	} else if h.BaseOffset != 0 {
		return Validated{}, errInvalid("the base offset of a produced record batch must be 0, not %d", h.BaseOffset)
	}
	if opts.MaxMessageBytes > 0 && total > opts.MaxMessageBytes {
		return Validated{}, fmt.Errorf("%w: record batch of %d bytes exceeds max.message.bytes %d", kerr.MessageTooLarge, total, opts.MaxMessageBytes)
	}
	if crc := ComputeCRC(batch); crc != h.CRC {
		return Validated{}, errCorrupt("record is corrupt (stored crc = %d, computed crc = %d)", h.CRC, crc)
	}

	// LogValidator.validateBatch for client appends.
	if int64(h.LastOffsetDelta)+1 <= 0 {
		return Validated{}, errInvalid("batch has an invalid offset range [0, %d]", h.LastOffsetDelta)
	}
	if h.NumRecords <= 0 {
		return Validated{}, errInvalid("invalid reported record count %d", h.NumRecords)
	}
	if int64(h.LastOffsetDelta)+1 != int64(h.NumRecords) {
		return Validated{}, errInvalid("inconsistent batch offset range [0, %d] and record count %d", h.LastOffsetDelta, h.NumRecords)
	}
	if h.IsControl() {
		return Validated{}, errInvalid("clients may not write control records")
	}
	if h.IsIdempotent() && h.BaseSequence < 0 {
		return Validated{}, errInvalid("invalid sequence number %d for producer id %d", h.BaseSequence, h.ProducerID)
	}

	// LogValidator: every record.
	walk, err := walkBatch(h, batch, &opts)
	if err != nil {
		return Validated{}, err
	}

	target := opts.TargetCodec
	if opts.KeepProducerCodec {
		target = codec
	}
	inPlace := codec == target && (codec == CodecNone || walk.sequentialOffsets)
	if !inPlace {
		level := opts.TargetLevel
		if opts.KeepProducerCodec || level == 0 {
			level = DefaultLevel
		}
		rebuilt, err := rebuild(batch, target, level)
		if err != nil {
			return Validated{}, err
		}
		// UnifiedLog.append rechecks sizes when validation may change them.
		if opts.MaxMessageBytes > 0 && len(rebuilt) > opts.MaxMessageBytes {
			return Validated{}, fmt.Errorf("%w: recompressed record batch of %d bytes exceeds max.message.bytes %d", kerr.MessageTooLarge, len(rebuilt), opts.MaxMessageBytes)
		}
		rh, _ := ParseHeader(rebuilt)
		return Validated{Batch: rebuilt, Header: rh, Recompressed: true}, nil
	}

	if opts.TimestampType == CreateTime && (h.TimestampType() != CreateTime || h.MaxTimestamp != walk.maxTimestamp) {
		setMaxTimestamp(batch, uint16(h.Attributes)&^attrTimestampType, walk.maxTimestamp)
		h, _ = ParseHeader(batch)
	}
	return Validated{Batch: batch, Header: h}, nil
}

// walkBatch runs walkRecords over the batch's records, decompressing them
// into a pooled buffer when needed.
func walkBatch(h Header, batch []byte, opts *ValidateOptions) (recordWalk, error) {
	if h.Codec() == CodecNone {
		return walkRecords(h, batch[BatchHeaderSize:], opts)
	}
	scratch := getBuffer()
	defer putBuffer(scratch)
	payload, err := recordsPayload((*scratch)[:0], h, batch)
	if err != nil {
		return recordWalk{}, err
	}
	*scratch = payload
	return walkRecords(h, payload, opts)
}

// recordWalk summarises a validated batch's records.
type recordWalk struct {
	maxTimestamp      int64 // max record timestamp, starting from -1 as Kafka's does
	sequentialOffsets bool  // offset deltas are exactly 0..n-1
}

// walkRecords checks each record of a batch without allocating, applying
// LogValidator.validateRecord: framing (InvalidRecordException in
// DefaultRecord.readFrom), key presence for compacted topics and KIP-937
// timestamps. Like Kafka it looks at every record and answers
// INVALID_TIMESTAMP if any timestamp failed, INVALID_RECORD otherwise.
func walkRecords(h Header, payload []byte, opts *ValidateOptions) (recordWalk, error) {
	w := recordWalk{maxTimestamp: noTimestamp, sequentialOffsets: true}
	var refused []RecordError // allocated only when a record fails
	anyTimestamp := false
	for i := int32(0); i < h.NumRecords; i++ {
		r, n, err := parseRecord(payload, false, nil)
		if err != nil {
			return recordWalk{}, fmt.Errorf("record %d: %w", i, err)
		}
		payload = payload[n:]
		if r.OffsetDelta != i {
			w.sequentialOffsets = false
		}
		ts := recordTimestamp(h, &r)
		if opts.Compacted && r.Key == nil {
			refused = append(refused, RecordError{BatchIndex: i,
				Message: "Compacted topic cannot accept message without key in topic partition " + opts.Partition + "."})
		} else if msg, bad := timestampRejected(h, ts, int64(r.OffsetDelta), opts); bad {
			refused = append(refused, RecordError{BatchIndex: i, Message: msg})
			anyTimestamp = true
		} else if opts.CheckRecord != nil {
			if msg := opts.CheckRecord(r.Key, r.Value); msg != "" {
				refused = append(refused, RecordError{BatchIndex: i, Message: msg})
			}
		}
		if ts > w.maxTimestamp {
			w.maxTimestamp = ts
		}
	}
	if len(payload) != 0 {
		return recordWalk{}, errInvalid("incorrect declared batch size: %d bytes remain after %d records", len(payload), h.NumRecords)
	}
	if refused != nil {
		return recordWalk{}, recordErrors(refused, anyTimestamp)
	}
	return w, nil
}

// recordTimestamp is a record's absolute timestamp as Kafka's DefaultRecord
// computes it: the batch's MaxTimestamp for LogAppendTime batches, else
// FirstTimestamp plus the delta (wrapping like Java's long arithmetic).
func recordTimestamp(h Header, r *Record) int64 {
	if h.TimestampType() == LogAppendTime {
		return h.MaxTimestamp
	}
	return h.FirstTimestamp + r.TimestampDelta
}

// timestampRejected is LogValidator.validateTimestamp: CreateTime topics
// bound record timestamps per KIP-937 (records without timestamp, -1, pass);
// otherwise a batch that claims LogAppendTime is refused, since only the
// broker may assign it. msg is Kafka's wording; offset is the record's
// offset in the batch as produced.
func timestampRejected(h Header, ts, offset int64, opts *ValidateOptions) (msg string, bad bool) {
	if opts.TimestampType == CreateTime && ts != noTimestamp {
		diff := opts.Now - ts
		if diff > opts.TimestampBeforeMaxMs || -diff > opts.TimestampAfterMaxMs {
			return fmt.Sprintf("Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]",
				ts, offset, saturatingAdd(opts.Now, -opts.TimestampBeforeMaxMs), saturatingAdd(opts.Now, opts.TimestampAfterMaxMs)), true
		}
		return "", false
	}
	if h.TimestampType() == LogAppendTime {
		return fmt.Sprintf("Invalid timestamp type in message with offset %d. Producer should not set timestamp type to LogAppendTime.", offset), true
	}
	return "", false
}

// saturatingAdd is a+b clamped to the int64 range, for printing a window
// whose bound may be unlimited (math.MaxInt64).
func saturatingAdd(a, b int64) int64 {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}

// rebuild re-encodes a validated batch as Kafka's
// LogValidator.buildRecordsAndAssignOffsets does: offset deltas 0..n-1,
// timestamps re-based on the first record's (absolute timestamps are kept),
// record attributes 0, CreateTime with MaxTimestamp the records' maximum,
// and the base offset, producer fields, transactional flag and leader epoch
// kept (a produced batch's base offset is 0 unless KeepBaseOffset).
func rebuild(batch []byte, codec Codec, level Level) ([]byte, error) {
	h, recs, err := DecodeRecords(batch)
	if err != nil {
		return nil, err
	}
	first := recordTimestamp(h, &recs[0])
	maxTS := int64(noTimestamp)
	for i := range recs {
		ts := recordTimestamp(h, &recs[i])
		maxTS = max(maxTS, ts)
		recs[i].Attributes = 0
		recs[i].OffsetDelta = int32(i)
		recs[i].TimestampDelta = ts - first
	}
	nh := Header{
		BaseOffset:           h.BaseOffset,
		PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		Attributes:           h.Attributes & attrTransactional,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       first,
		MaxTimestamp:         maxTS,
		ProducerID:           h.ProducerID,
		ProducerEpoch:        h.ProducerEpoch,
		BaseSequence:         h.BaseSequence,
	}
	return BuildBatchLevel(nh, recs, codec, level)
}
