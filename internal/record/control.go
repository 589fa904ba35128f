package record

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Transaction markers (KIP-98): a control batch (attribute bit 0x20, with
// the transactional bit 0x10) holding one record whose key is
// version int16 (0) | type int16 (0 = abort, 1 = commit) and whose value is
// version int16 (0) | coordinatorEpoch int32, as Kafka's ControlRecordType
// and EndTransactionMarker encode them.

// ControlType is a control record's type.
type ControlType int16

// The control record types Kafka defines for transaction markers.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

// Marker is a decoded transaction marker.
type Marker struct {
	Type             ControlType
	CoordinatorEpoch int32
}

// BuildMarkerBatch builds the control batch that ends a producer's
// transaction: commit or abort, stamped with the coordinator's epoch. The
// base offset and partition leader epoch are set on append.
func BuildMarkerBatch(producerID int64, producerEpoch int16, m Marker, timestamp int64) ([]byte, error) {
	key := make([]byte, 4)
	binary.BigEndian.PutUint16(key[2:], uint16(m.Type))
	value := make([]byte, 6)
	binary.BigEndian.PutUint32(value[2:], uint32(m.CoordinatorEpoch))
	h := Header{
		Attributes:     attrControl | attrTransactional,
		FirstTimestamp: timestamp,
		MaxTimestamp:   timestamp,
		ProducerID:     producerID,
		ProducerEpoch:  producerEpoch,
		BaseSequence:   -1,
	}
	return BuildBatch(h, []Record{{Key: key, Value: value}}, CodecNone)
}

// ParseMarker decodes the marker of a control batch. Kafka's readers only
// look at the key's type (an unknown version is still read), and so does
// this; a key shorter than 4 bytes is a corrupt record.
func ParseMarker(batch []byte) (Marker, error) {
	h, recs, err := DecodeRecords(batch)
	if err != nil {
		return Marker{}, err
	}
	if !h.IsControl() || len(recs) != 1 {
		return Marker{}, fmt.Errorf("%w: not a control batch of one record", kerr.CorruptMessage)
	}
	k, v := recs[0].Key, recs[0].Value
	if len(k) < 4 {
		return Marker{}, fmt.Errorf("%w: control record key of %d bytes", kerr.CorruptMessage, len(k))
	}
	m := Marker{Type: ControlType(binary.BigEndian.Uint16(k[2:])), CoordinatorEpoch: -1}
	if len(v) >= 6 {
		m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(v[2:]))
	}
	return m, nil
}
