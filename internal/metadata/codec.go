package metadata

import (
	"encoding/json"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The record encoding is JSON: each record is an envelope
//
//	{"type": <RecordType>, "version": <schema version>, "data": {...}}
//
// and a committed batch (one log entry, one Raft entry later) is
//
//	{"offset": <offset of the batch's last record>, "records": [envelope, ...]}
//
// JSON keeps the log debuggable with standard tools; metadata volume is small
// (a few records per admin operation). Every record type is at version 0; a
// reader rejects versions newer than it knows, so a downgrade cannot silently
// drop fields.

// recordVersion is the current schema version of every record type.
const recordVersion = 0

type recordEnvelope struct {
	Type    RecordType      `json:"type"`
	Version int16           `json:"version"`
	Data    json.RawMessage `json:"data"`
}

// EncodeRecord returns the encoding of one record.
func EncodeRecord(r Record) ([]byte, error) {
	env, err := envelopeOf(r)
	if err != nil {
		return nil, err
	}
	return json.Marshal(env)
}

// DecodeRecord parses the output of EncodeRecord. Errors wrap
// kerr.CorruptMessage.
func DecodeRecord(b []byte) (Record, error) {
	var env recordEnvelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("%w: metadata record: %v", kerr.CorruptMessage, err)
	}
	return recordOf(env)
}

func envelopeOf(r Record) (recordEnvelope, error) {
	if r == nil {
		return recordEnvelope{}, fmt.Errorf("metadata: nil record")
	}
	data, err := json.Marshal(r)
	if err != nil {
		return recordEnvelope{}, fmt.Errorf("metadata: encoding %v: %w", r.Type(), err)
	}
	return recordEnvelope{Type: r.Type(), Version: recordVersion, Data: data}, nil
}

func recordOf(env recordEnvelope) (Record, error) {
	r, ok := newRecord(env.Type)
	if !ok {
		return nil, fmt.Errorf("%w: unknown metadata record type %d", kerr.CorruptMessage, env.Type)
	}
	if env.Version < 0 || env.Version > recordVersion {
		return nil, fmt.Errorf("%w: %v version %d is not supported (max %d)", kerr.CorruptMessage, env.Type, env.Version, recordVersion)
	}
	if err := json.Unmarshal(env.Data, r); err != nil {
		return nil, fmt.Errorf("%w: decoding %v: %v", kerr.CorruptMessage, env.Type, err)
	}
	return r, nil
}

type batchEnvelope struct {
	Offset  int64            `json:"offset"`
	Records []recordEnvelope `json:"records"`
}

// EncodeBatch encodes a committed batch whose last record has the given
// offset. It is the payload of one metadata log entry.
func EncodeBatch(offset int64, recs []Record) ([]byte, error) {
	b := batchEnvelope{Offset: offset, Records: make([]recordEnvelope, 0, len(recs))}
	for _, r := range recs {
		env, err := envelopeOf(r)
		if err != nil {
			return nil, err
		}
		b.Records = append(b.Records, env)
	}
	return json.Marshal(b)
}

// DecodeBatch parses the output of EncodeBatch. An empty batch is valid (a
// snapshot of an empty image); Log.Commit never writes one. Errors wrap
// kerr.CorruptMessage.
func DecodeBatch(b []byte) (offset int64, recs []Record, err error) {
	var env batchEnvelope
	if err := json.Unmarshal(b, &env); err != nil {
		return 0, nil, fmt.Errorf("%w: metadata batch: %v", kerr.CorruptMessage, err)
	}
	recs = make([]Record, 0, len(env.Records))
	for _, e := range env.Records {
		r, err := recordOf(e)
		if err != nil {
			return 0, nil, err
		}
		recs = append(recs, r)
	}
	return env.Offset, recs, nil
}
