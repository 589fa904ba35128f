package record

// Down-conversion for Fetch v0-v3 (clients before Kafka 0.11), which read
// message format v0 (Fetch v0-v1) or v1 (v2-v3) only. Kafka 3.9 converted
// the v2 batches it sends to such clients (RecordsUtil.downConvert, behind
// message.downconversion.enable; Kafka 4 dropped it, KIP-896); so does
// DownConvert, message by message:
//
//   - control batches are left out, as Kafka leaves them out; transactional
//     records are kept (these versions read uncommitted);
//   - records before the fetch offset are left out;
//   - record headers are dropped, which message formats v0/v1 cannot carry;
//   - v1 messages keep the record's timestamp and the batch's timestamp
//     type (LogAppendTime: the batch's time), v0 messages have none;
//   - messages are written uncompressed, whatever the batch's codec:
//     clients read both, and uncompressed output sidesteps the legacy lz4
//     framing Kafka's v0 clients expect.
//
// The conversion stops at the first batch that would take the output past
// limit, except that the first batch with messages to send is always
// converted whole, so a client always makes progress (KIP-74's rule): a
// control batch or records before the fetch offset ahead of it do not
// count as that first batch.

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DownConvert converts the whole v2 batches of data (a fetch's record set,
// which may end inside a batch) to a message set of the given magic (0 or
// 1), leaving out records before fromOffset.
func DownConvert(data []byte, magic int8, fromOffset int64, limit int) ([]byte, error) {
	var out []byte
	for len(data) >= BatchHeaderSize {
		h, err := ParseHeader(data)
		if err != nil {
			return nil, err
		}
		total := h.TotalSize()
		if total < BatchHeaderSize || total > len(data) {
			break // a partial trailing batch
		}
		batch := data[:total]
		data = data[total:]
		if h.IsControl() {
			continue
		}
		_, recs, err := DecodeRecords(batch)
		if err != nil {
			return nil, err
		}
		mark := len(out)
		for i := range recs {
			r := &recs[i]
			offset := h.BaseOffset + int64(r.OffsetDelta)
			if offset < fromOffset {
				continue
			}
			out = appendLegacyMessage(out, magic, h, offset, recordTimestamp(h, r), r.Key, r.Value)
		}
		if mark > 0 && len(out) > limit {
			return out[:mark], nil
		}
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}

// appendLegacyMessage appends one uncompressed message.
func appendLegacyMessage(dst []byte, magic int8, h Header, offset, ts int64, key, value []byte) []byte {
	start := len(dst)
	if magic == 0 {
		m := kmsg.MessageV0{Offset: offset, Magic: 0, Key: key, Value: value}
		dst = m.AppendTo(dst)
	} else {
		var attrs int8
		if h.TimestampType() == LogAppendTime {
			attrs = legacyAttrLogAppend
		}
		m := kmsg.MessageV1{Offset: offset, Magic: 1, Attributes: attrs, Timestamp: ts, Key: key, Value: value}
		dst = m.AppendTo(dst)
	}
	msg := dst[start:]
	binary.BigEndian.PutUint32(msg[offLength:], uint32(len(msg)-LengthFieldEnd))
	binary.BigEndian.PutUint32(msg[legacyOffCRC:], crc32.ChecksumIEEE(msg[legacyOffMagic:]))
	return dst
}
