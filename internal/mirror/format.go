package mirror

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The records of MM2's internal topics, in Kafka's format: Kafka's Struct
// serialization, where a STRING is an int16 length and UTF-8 bytes and the
// integers are big-endian.
//
//	offset sync  key:   topic STRING, partition INT32
//	             value: upstreamOffset INT64, offset INT64
//	checkpoint   key:   group STRING, topic STRING, partition INT32
//	             value: version INT16 (0), upstreamOffset INT64, offset INT64, metadata STRING
//	heartbeat    key:   sourceClusterAlias STRING, targetClusterAlias STRING
//	             value: version INT16 (0), timestamp INT64

// OffsetSync says that upstream offset Upstream of a source partition was
// written at offset Downstream of its remote partition.
type OffsetSync struct {
	Topic      string
	Partition  int32
	Upstream   int64
	Downstream int64
}

// Checkpoint is a group's committed offset on the source, translated for
// the target.
type Checkpoint struct {
	Group      string
	Topic      string // the remote topic's name on the target
	Partition  int32
	Upstream   int64
	Downstream int64
	Metadata   string
}

// Heartbeat is one heartbeat record.
type Heartbeat struct {
	Source, Target string
	TimestampMs    int64
}

var errShort = errors.New("record too short")

type writer []byte

func (w writer) str(s string) writer {
	w = binary.BigEndian.AppendUint16(w, uint16(len(s)))
	return append(w, s...)
}
func (w writer) i16(v int16) writer { return binary.BigEndian.AppendUint16(w, uint16(v)) }
func (w writer) i32(v int32) writer { return binary.BigEndian.AppendUint32(w, uint32(v)) }
func (w writer) i64(v int64) writer { return binary.BigEndian.AppendUint64(w, uint64(v)) }

type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || len(r.b) < n {
		r.err = errShort
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}
func (r *reader) i16() int16 {
	b := r.take(2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}
func (r *reader) i32() int32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}
func (r *reader) i64() int64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}
func (r *reader) str() string {
	n := r.i16()
	return string(r.take(int(n)))
}

// Key is the offset sync's record key.
func (s OffsetSync) Key() []byte { return writer(nil).str(s.Topic).i32(s.Partition) }

// Value is the offset sync's record value.
func (s OffsetSync) Value() []byte { return writer(nil).i64(s.Upstream).i64(s.Downstream) }

// DecodeOffsetSync parses an offset-syncs record.
func DecodeOffsetSync(key, value []byte) (OffsetSync, error) {
	k, v := reader{b: key}, reader{b: value}
	s := OffsetSync{Topic: k.str(), Partition: k.i32(), Upstream: v.i64(), Downstream: v.i64()}
	if k.err != nil || v.err != nil {
		return OffsetSync{}, fmt.Errorf("offset sync: %w", errors.Join(k.err, v.err))
	}
	return s, nil
}

// Key is the checkpoint's record key.
func (c Checkpoint) Key() []byte {
	return writer(nil).str(c.Group).str(c.Topic).i32(c.Partition)
}

// Value is the checkpoint's record value (version 0).
func (c Checkpoint) Value() []byte {
	return writer(nil).i16(0).i64(c.Upstream).i64(c.Downstream).str(c.Metadata)
}

// DecodeCheckpoint parses a checkpoints record.
func DecodeCheckpoint(key, value []byte) (Checkpoint, error) {
	k, v := reader{b: key}, reader{b: value}
	c := Checkpoint{Group: k.str(), Topic: k.str(), Partition: k.i32()}
	if ver := v.i16(); v.err == nil && ver != 0 {
		return Checkpoint{}, fmt.Errorf("checkpoint: unknown version %d", ver)
	}
	c.Upstream, c.Downstream, c.Metadata = v.i64(), v.i64(), v.str()
	if k.err != nil || v.err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: %w", errors.Join(k.err, v.err))
	}
	return c, nil
}

// Key is the heartbeat's record key.
func (h Heartbeat) Key() []byte { return writer(nil).str(h.Source).str(h.Target) }

// Value is the heartbeat's record value (version 0).
func (h Heartbeat) Value() []byte { return writer(nil).i16(0).i64(h.TimestampMs) }

// DecodeHeartbeat parses a heartbeats record.
func DecodeHeartbeat(key, value []byte) (Heartbeat, error) {
	k, v := reader{b: key}, reader{b: value}
	h := Heartbeat{Source: k.str(), Target: k.str()}
	if ver := v.i16(); v.err == nil && ver != 0 {
		return Heartbeat{}, fmt.Errorf("heartbeat: unknown version %d", ver)
	}
	h.TimestampMs = v.i64()
	if k.err != nil || v.err != nil {
		return Heartbeat{}, fmt.Errorf("heartbeat: %w", errors.Join(k.err, v.err))
	}
	return h, nil
}
