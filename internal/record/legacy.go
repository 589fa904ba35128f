package record

// Legacy message sets (magic 0 and 1), carried by Produce v0-v2 from
// clients older than Kafka 0.11. Kafka 3.x converted them to v2 batches as
// it appended them (LogValidator: convertAndAssignOffsetsNonCompressed,
// validateMessagesAndAssignOffsetsCompressed); UpConvertLegacy does the
// same, so such a produce is stored as any other.
//
// A message: offset int64, size int32, then crc uint32 (IEEE, over the
// rest), magic int8, attributes int8 (codec in bits 0-2, timestamp type in
// bit 3 from magic 1), timestamp int64 (magic 1 only), key and value as
// int32-length bytes (-1: null). A compressed message (a "wrapper") holds
// a message set, compressed, as its value.

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Legacy message layout: field offsets and attribute bits.
const (
	legacyOffCRC        = 12
	legacyOffMagic      = 16
	legacyOffAttributes = 17
	legacyAttrCodecMask = 0x07
	legacyAttrLogAppend = 0x08
	legacyMaxMagic      = 1
)

// legacyMessage is one decoded message.
type legacyMessage struct {
	magic      int8
	attributes int8
	timestamp  int64 // -1 for magic 0
	key, value []byte
}

// UpConvertLegacy converts the message set of a Produce v0-v2 partition to
// one v2 batch (base offset 0, no producer id), keeping the keys, values
// and timestamps (none, -1, for magic 0) and the producer's codec, which
// ValidateProduce then validates like any produced batch. Data already in
// v2 batches is returned as it is. It returns nil, nil for a set without a
// complete message (Kafka appends nothing and answers without error).
//
// Errors, as Kafka's: a size below the minimum overhead or a bad magic
// (CORRUPT_MESSAGE), a message failing its CRC (CORRUPT_MESSAGE), zstd or
// an undefined codec (UNSUPPORTED_COMPRESSION_TYPE), an undecodable
// compressed value (CORRUPT_MESSAGE); inside a compressed message, inner
// messages that are compressed again, of another magic or failing their
// CRC are refused with KIP-467 record errors (INVALID_RECORD).
func UpConvertLegacy(data []byte) ([]byte, error) {
	if len(data) > offMagic && int8(data[offMagic]) == currentMagic {
		return data, nil
	}
	var recs []legacyMessage
	var refused []RecordError
	sourceCodec := CodecNone
	logAppendTime := false
	err := walkLegacy(data, func(m legacyMessage) error {
		codec := Codec(m.attributes & legacyAttrCodecMask)
		if m.magic == 1 && m.attributes&legacyAttrLogAppend != 0 {
			logAppendTime = true
		}
		if codec == CodecNone {
			recs = append(recs, m)
			return nil
		}
		if codec == CodecZstd {
			return fmt.Errorf("%w: zstd is not supported for message format v%d", kerr.UnsupportedCompressionType, m.magic)
		}
		if !codec.valid() {
			return errUnknownCodec(codec)
		}
		sourceCodec = codec
		inner, err := decompress(nil, codec, m.value)
		if err != nil {
			return err
		}
		return walkLegacy(inner, func(im legacyMessage) error {
			index := int32(len(recs))
			switch {
			case im.magic != m.magic:
				refused = append(refused, RecordError{BatchIndex: index,
					Message: fmt.Sprintf("Record magic %d does not match outer magic %d", im.magic, m.magic)})
			case im.attributes&legacyAttrCodecMask != 0:
				refused = append(refused, RecordError{BatchIndex: index,
					Message: "Compressed outer record should not have an inner record with a compression attribute set"})
			}
			if m.magic == 1 && m.attributes&legacyAttrLogAppend != 0 {
				im.timestamp = m.timestamp // the wrapper's time stands for all
			}
			recs = append(recs, im)
			return nil
		}, func(crcErr error) {
			refused = append(refused, RecordError{BatchIndex: int32(len(recs)), Message: crcErr.Error()})
			recs = append(recs, legacyMessage{timestamp: noTimestamp}) // holds its index
		})
	}, nil)
	if err != nil {
		return nil, err
	}
	if refused != nil {
		return nil, recordErrors(refused, false)
	}
	if len(recs) == 0 {
		return nil, nil
	}
	first := recs[0].timestamp
	h := Header{
		Magic: currentMagic, FirstTimestamp: first, MaxTimestamp: noTimestamp,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		LastOffsetDelta: int32(len(recs) - 1),
	}
	if logAppendTime {
		h.Attributes |= attrTimestampType
	}
	out := make([]Record, len(recs))
	for i, m := range recs {
		h.MaxTimestamp = max(h.MaxTimestamp, m.timestamp)
		out[i] = Record{OffsetDelta: int32(i), TimestampDelta: m.timestamp - first, Key: m.key, Value: m.value}
	}
	return BuildBatch(h, out, sourceCodec)
}

// walkLegacy calls fn for each complete message of a legacy message set; a
// partial trailing message ends the walk, as Kafka's iterator ends there.
// A CRC mismatch is an error, unless onCRC is given (inner messages), which
// then gets it and the walk goes on.
func walkLegacy(data []byte, fn func(legacyMessage) error, onCRC func(error)) error {
	for len(data) >= LengthFieldEnd {
		size := int32(binary.BigEndian.Uint32(data[offLength:]))
		if size < legacyMinRecordLen {
			return errCorrupt("record size %d is less than the minimum record overhead %d", size, legacyMinRecordLen)
		}
		total := LengthFieldEnd + int(size)
		if len(data) < total {
			return nil
		}
		msg := data[:total:total]
		data = data[total:]
		magic := int8(msg[legacyOffMagic])
		if magic < 0 || magic > legacyMaxMagic {
			return errCorrupt("invalid magic %d found in a legacy message set", magic)
		}
		stored := binary.BigEndian.Uint32(msg[legacyOffCRC:])
		if computed := crc32.ChecksumIEEE(msg[legacyOffMagic:]); computed != stored {
			err := errCorrupt("Record is corrupt (stored crc = %d, computed crc = %d)", stored, computed)
			if onCRC == nil {
				return err
			}
			onCRC(err)
			continue
		}
		m, err := decodeLegacy(msg, magic)
		if err != nil {
			return err
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

// decodeLegacy decodes one framed message with kmsg's message types and
// checks that its fields fill its size exactly.
func decodeLegacy(msg []byte, magic int8) (legacyMessage, error) {
	m := legacyMessage{magic: magic, attributes: int8(msg[legacyOffAttributes]), timestamp: noTimestamp}
	var used int
	if magic == 0 {
		var v kmsg.MessageV0
		if err := v.ReadFrom(msg); err != nil {
			return m, errCorrupt("malformed message: %v", err)
		}
		m.key, m.value = v.Key, v.Value
		used = legacyOffAttributes + 1 + 8 + len(v.Key) + len(v.Value)
	} else {
		var v kmsg.MessageV1
		if err := v.ReadFrom(msg); err != nil {
			return m, errCorrupt("malformed message: %v", err)
		}
		m.key, m.value, m.timestamp = v.Key, v.Value, v.Timestamp
		used = legacyOffAttributes + 1 + 8 + 8 + len(v.Key) + len(v.Value)
	}
	if used != len(msg) {
		return m, errCorrupt("message size %d does not match its fields (%d bytes)", len(msg)-LengthFieldEnd, used-LengthFieldEnd)
	}
	return m, nil
}
