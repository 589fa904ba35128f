package group

// The KIP-848 consumer group records in __consumer_offsets. kmsg has no
// schemas for them, so they are encoded here in the format of Kafka's
// coordinator record JSON definitions (group-coordinator/.../message):
// a key is an int16 record type followed by its fields in the
// non-flexible encoding (int16-length strings); a value is an int16
// version (0) followed by its fields in the flexible encoding (compact
// strings and arrays, uvarint lengths plus one, a tagged-field section
// after every struct).
//
//	type 3 ConsumerGroupMetadata           key {group}         value {epoch}
//	type 5 ConsumerGroupMemberMetadata     key {group, member} value {instance id, rack id,
//	                                                                  client id, client host,
//	                                                                  subscribed topic names,
//	                                                                  subscribed topic regex,
//	                                                                  rebalance timeout ms,
//	                                                                  server assignor}
//	type 6 ConsumerGroupTargetAssignmentMetadata key {group}   value {assignment epoch}
//	type 7 ConsumerGroupTargetAssignmentMember   key {group, member}
//	                                                           value {[topic id, [partition]]}
//	type 8 ConsumerGroupCurrentMemberAssignment  key {group, member}
//	                                                           value {member epoch, previous
//	                                                                  member epoch, state,
//	                                                                  assigned, pending revocation}
//
// Tagged fields Kafka added later (metadata hash, creation time,
// assignment epochs) are not written and are skipped when read, as their
// defaults mean "unknown" to Kafka. Type 4 (ConsumerGroupPartitionMetadata,
// deprecated by KIP-1101) and 16 (regular expressions, resolved here from
// the live metadata instead) are not written and are ignored on load.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// The record types (key versions) of consumer group records.
const (
	recConsumerGroupMetadata      = 3
	recConsumerGroupPartitionMeta = 4
	recConsumerMemberMetadata     = 5
	recTargetAssignmentMetadata   = 6
	recTargetAssignmentMember     = 7
	recCurrentMemberAssignment    = 8
)

// classicMemberMetadataTag is ConsumerGroupMemberMetadataValue's tag of
// ClassicMemberMetadata.
const classicMemberMetadataTag = 0

// consumerRecord is one replayed consumer group record; which fields are
// set depends on kind. A nil value (tombstone) sets only the key fields.
type consumerRecord struct {
	kind      int16
	group     string
	member    string
	tombstone bool

	epoch int32 // type 3: group epoch; type 6: assignment epoch

	meta memberMetadata // type 5

	partitions assignment // type 7: target; type 8: assigned

	// type 8
	memberEpoch, prevEpoch int32
	state                  memberState
	revoking               assignment
}

// memberMetadata is a member's part of ConsumerGroupMemberMetadataValue.
type memberMetadata struct {
	instanceID, rackID   *string
	clientID, clientHost string
	topics               []string
	regex                *string
	rebalanceTimeoutMs   int32
	serverAssignor       *string
	// classic is set for a member speaking the classic protocol in a
	// consumer group (KIP-848 online migration); nil otherwise.
	classic *classicMetadata
}

// classicMetadata is ConsumerGroupMemberMetadataValue's ClassicMemberMetadata
// (tagged field 0): what a classic member joined with.
type classicMetadata struct {
	sessionTimeoutMs int32
	protocols        []Protocol
}

// --- encoding ---

func appendKeyString(dst []byte, s string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

func consumerKey(kind int16, group string, member ...string) []byte {
	dst := binary.BigEndian.AppendUint16(nil, uint16(kind))
	dst = appendKeyString(dst, group)
	for _, m := range member {
		dst = appendKeyString(dst, m)
	}
	return dst
}

// flexWriter appends flexible-version fields.
type flexWriter struct{ b []byte }

func newValue() *flexWriter { return &flexWriter{b: binary.BigEndian.AppendUint16(nil, 0)} }

func (w *flexWriter) int8(v int8)   { w.b = append(w.b, byte(v)) }
func (w *flexWriter) int32(v int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *flexWriter) uvarint(v int) { w.b = binary.AppendUvarint(w.b, uint64(v)) }
func (w *flexWriter) noTags()       { w.uvarint(0) }

func (w *flexWriter) string(s string) {
	w.uvarint(len(s) + 1)
	w.b = append(w.b, s...)
}

func (w *flexWriter) nullableString(s *string) {
	if s == nil {
		w.uvarint(0)
		return
	}
	w.string(*s)
}

func (w *flexWriter) assignment(a assignment) {
	ids := a.topicIDs()
	w.uvarint(len(ids) + 1)
	for _, id := range ids {
		w.b = append(w.b, id[:]...)
		ps := a[id]
		w.uvarint(len(ps) + 1)
		for _, p := range ps {
			w.int32(p)
		}
		w.noTags()
	}
}

func groupEpochRecord(group string, epoch int32) kv {
	w := newValue()
	w.int32(epoch)
	w.noTags()
	return kv{key: consumerKey(recConsumerGroupMetadata, group), value: w.b}
}

func memberMetadataRecord(group, member string, m memberMetadata) kv {
	w := newValue()
	w.nullableString(m.instanceID)
	w.nullableString(m.rackID)
	w.string(m.clientID)
	w.string(m.clientHost)
	w.uvarint(len(m.topics) + 1)
	for _, t := range m.topics {
		w.string(t)
	}
	w.nullableString(m.regex)
	w.int32(m.rebalanceTimeoutMs)
	w.nullableString(m.serverAssignor)
	if m.classic == nil {
		w.noTags()
	} else {
		// Tag 0, ClassicMemberMetadata: a nullable struct, so its
		// body starts with a presence byte.
		body := &flexWriter{}
		body.int8(1)
		body.int32(m.classic.sessionTimeoutMs)
		body.uvarint(len(m.classic.protocols) + 1)
		for _, p := range m.classic.protocols {
			body.string(p.Name)
			body.uvarint(len(p.Metadata) + 1)
			body.b = append(body.b, p.Metadata...)
			body.noTags()
		}
		body.noTags()
		w.uvarint(1)
		w.uvarint(classicMemberMetadataTag)
		w.uvarint(len(body.b))
		w.b = append(w.b, body.b...)
	}
	return kv{key: consumerKey(recConsumerMemberMetadata, group, member), value: w.b}
}

func targetEpochRecord(group string, epoch int32) kv {
	w := newValue()
	w.int32(epoch)
	w.noTags()
	return kv{key: consumerKey(recTargetAssignmentMetadata, group), value: w.b}
}

func targetMemberRecord(group, member string, a assignment) kv {
	w := newValue()
	w.assignment(a)
	w.noTags()
	return kv{key: consumerKey(recTargetAssignmentMember, group, member), value: w.b}
}

func currentAssignmentRecord(group string, m *consumerMember) kv {
	w := newValue()
	w.int32(m.epoch)
	w.int32(m.prevEpoch)
	w.int8(int8(m.state))
	w.assignment(m.assigned)
	w.assignment(m.revoking)
	w.noTags()
	return kv{key: consumerKey(recCurrentMemberAssignment, group, m.id), value: w.b}
}

// memberTombstones delete a member's records, in the order Kafka writes
// them when a member is fenced or leaves.
func memberTombstones(group, member string) []kv {
	return []kv{
		{key: consumerKey(recCurrentMemberAssignment, group, member)},
		{key: consumerKey(recTargetAssignmentMember, group, member)},
		{key: consumerKey(recConsumerMemberMetadata, group, member)},
	}
}

// consumerGroupTombstones delete an empty consumer group's own records.
func consumerGroupTombstones(group string) []kv {
	return []kv{
		{key: consumerKey(recTargetAssignmentMetadata, group)},
		{key: consumerKey(recConsumerGroupMetadata, group)},
	}
}

// --- decoding ---

var errShort = errors.New("truncated")

// reader consumes big-endian and flexible-version fields; the first error
// sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.err = errShort
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) int8() int8 {
	if b := r.take(1); b != nil {
		return int8(b[0])
	}
	return 0
}

func (r *reader) int16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *reader) int32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) uvarint() int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > 1<<30 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *reader) keyString() string { return string(r.take(int(r.int16()))) }

func (r *reader) nullableString() *string {
	n := r.uvarint()
	if n == 0 || r.err != nil {
		return nil
	}
	s := string(r.take(n - 1))
	return &s
}

func (r *reader) string() string {
	if s := r.nullableString(); s != nil {
		return *s
	}
	return ""
}

// skipTags skips a tagged-field section: none of the tags are needed.
func (r *reader) skipTags() {
	n := r.uvarint()
	for i := 0; i < n && r.err == nil; i++ {
		r.uvarint() // tag
		r.take(r.uvarint())
	}
}

func (r *reader) assignment() assignment {
	n := r.uvarint() - 1
	a := assignment{}
	for i := 0; i < n && r.err == nil; i++ {
		var id metadata.Uuid
		copy(id[:], r.take(16))
		np := r.uvarint() - 1
		// Each partition takes 4 bytes: a count the value cannot hold
		// fails on reading, without reserving room for it first.
		ps := make([]int32, 0, min(max(np, 0), len(r.b)/4))
		for j := 0; j < np && r.err == nil; j++ {
			ps = append(ps, r.int32())
		}
		r.skipTags()
		if len(ps) > 0 {
			slices.Sort(ps)
			a[id] = ps
		}
	}
	return a
}

// decodeConsumerRecord parses a consumer group record of the given type.
func decodeConsumerRecord(kind int16, key, value []byte) (consumerRecord, error) {
	kr := &reader{b: key[2:]}
	rec := consumerRecord{kind: kind, group: kr.keyString(), tombstone: value == nil}
	switch kind {
	case recConsumerMemberMetadata, recTargetAssignmentMember, recCurrentMemberAssignment:
		rec.member = kr.keyString()
	}
	if kr.err != nil {
		return rec, fmt.Errorf("%w: consumer group record key of type %d: %v", kerr.CorruptMessage, kind, kr.err)
	}
	if value == nil {
		return rec, nil
	}
	r := &reader{b: value}
	if v := r.int16(); v != 0 && r.err == nil {
		return rec, fmt.Errorf("%w: consumer group record type %d value version %d", kerr.CorruptMessage, kind, v)
	}
	switch kind {
	case recConsumerGroupMetadata, recTargetAssignmentMetadata:
		rec.epoch = r.int32()
	case recConsumerMemberMetadata:
		m := &rec.meta
		m.instanceID = r.nullableString()
		m.rackID = r.nullableString()
		m.clientID = r.string()
		m.clientHost = r.string()
		n := r.uvarint() - 1
		for i := 0; i < n && r.err == nil; i++ {
			m.topics = append(m.topics, r.string())
		}
		m.regex = r.nullableString()
		m.rebalanceTimeoutMs = r.int32()
		m.serverAssignor = r.nullableString()
		m.classic = r.memberMetadataTags()
		return rec, r.valueErr(kind)
	case recTargetAssignmentMember:
		rec.partitions = r.assignment()
	case recCurrentMemberAssignment:
		rec.memberEpoch = r.int32()
		rec.prevEpoch = r.int32()
		rec.state = memberState(r.int8())
		rec.partitions = r.assignment()
		rec.revoking = r.assignment()
	}
	r.skipTags()
	return rec, r.valueErr(kind)
}

func (r *reader) valueErr(kind int16) error {
	if r.err != nil {
		return fmt.Errorf("%w: consumer group record value of type %d: %v", kerr.CorruptMessage, kind, r.err)
	}
	return nil
}

// memberMetadataTags reads ConsumerGroupMemberMetadataValue's tagged
// fields: ClassicMemberMetadata (tag 0) is kept, the others skipped.
func (r *reader) memberMetadataTags() *classicMetadata {
	var cm *classicMetadata
	n := r.uvarint()
	for i := 0; i < n && r.err == nil; i++ {
		tag := r.uvarint()
		body := r.take(r.uvarint())
		if tag != classicMemberMetadataTag || r.err != nil {
			continue
		}
		br := &reader{b: body}
		if br.int8() < 0 {
			continue // null
		}
		c := &classicMetadata{sessionTimeoutMs: br.int32()}
		np := br.uvarint() - 1
		for j := 0; j < np && br.err == nil; j++ {
			name := br.string()
			md := br.take(br.uvarint() - 1)
			br.skipTags()
			c.protocols = append(c.protocols, Protocol{Name: name, Metadata: slices.Clone(md)})
		}
		br.skipTags()
		if br.err != nil {
			r.err = br.err
			return nil
		}
		cm = c
	}
	return cm
}
