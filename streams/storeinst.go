package streams

import (
	"encoding/binary"
	"math"
)

// storeInst is one store of one task: its backend and its changelog.
// Every write goes to the backend and, if logged, to
// <application.id>-<store>-changelog at the task's partition, so a
// restarted or moved task restores the store by replaying it.
type storeInst struct {
	spec      *storeSpec
	bs        byteStore
	changelog string // "" when not logged
	t         *task
	// restoreFrom is the changelog offset a restore starts at: 0, or the
	// position of the standby task the store comes from.
	restoreFrom int64
}

func changelogTopic(appID, store string) string { return appID + "-" + store + "-changelog" }

func (s *storeInst) put(k, v []byte) {
	s.bs.put(k, v)
	if s.changelog != "" && s.t != nil {
		s.t.col.send(s.changelog, k, v, s.t.cur.ts, nil, s.t.id.Partition)
	}
}

func (s *storeInst) get(k []byte) ([]byte, bool) { return s.bs.get(k) }

// Timestamped values (DSL key-value stores, Kafka Streams'
// TimestampedKeyValueStore): 8-byte big-endian timestamp, then the value.
func tsValue(ts int64, v []byte) []byte {
	out := make([]byte, 8, 8+len(v))
	binary.BigEndian.PutUint64(out, uint64(ts))
	return append(out, v...)
}

func splitTsValue(b []byte) (int64, []byte) {
	if len(b) < 8 {
		panic(storeError{errShortValue})
	}
	return int64(binary.BigEndian.Uint64(b)), b[8:]
}

type errString string

func (e errString) Error() string { return string(e) }

const errShortValue = errString("timestamped store value shorter than its timestamp")

// Segmented keys (window, session and join stores), ordered so that a
// segment holds a time range and, inside it, a key's entries are adjacent
// and time-ordered, as Kafka Streams' segmented stores:
//
//	segment id (8) | key length (4) | key | t1 (8) | t2 (8)
//
// Times are stored with the sign bit flipped so they order as signed
// numbers. Dropping expired segments is one range delete.
func segKey(seg int64, key []byte, t1, t2 int64) []byte {
	out := make([]byte, 0, 8+4+len(key)+16)
	out = binary.BigEndian.AppendUint64(out, orderable(seg))
	out = binary.BigEndian.AppendUint32(out, uint32(len(key)))
	out = append(out, key...)
	out = binary.BigEndian.AppendUint64(out, orderable(t1))
	return binary.BigEndian.AppendUint64(out, orderable(t2))
}

func segPrefix(seg int64, key []byte) []byte {
	out := make([]byte, 0, 12+len(key))
	out = binary.BigEndian.AppendUint64(out, orderable(seg))
	out = binary.BigEndian.AppendUint32(out, uint32(len(key)))
	return append(out, key...)
}

func segStart(seg int64) []byte { return binary.BigEndian.AppendUint64(nil, orderable(seg)) }

func parseSegKey(b []byte) (seg int64, key []byte, t1, t2 int64) {
	seg = fromOrderable(binary.BigEndian.Uint64(b))
	n := int(binary.BigEndian.Uint32(b[8:]))
	key = b[12 : 12+n]
	t1 = fromOrderable(binary.BigEndian.Uint64(b[12+n:]))
	t2 = fromOrderable(binary.BigEndian.Uint64(b[20+n:]))
	return
}

func orderable(v int64) uint64     { return uint64(v) ^ (1 << 63) }
func fromOrderable(u uint64) int64 { return int64(u ^ (1 << 63)) }

// prefixEnd is the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte{}, p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// segmented is a window/session store's view over its byte store.
type segmented struct {
	s *storeInst
}

func (w segmented) segOf(t int64) int64 {
	seg := w.s.spec.segment
	if t < 0 {
		return (t - seg + 1) / seg
	}
	return t / seg
}

func (w segmented) put(key []byte, t1, t2 int64, v []byte) {
	w.s.put(segKey(w.segOf(t1), key, t1, t2), v)
}

// fetch calls fn for key's entries with t1 in [from, to], in time order.
func (w segmented) fetch(key []byte, from, to int64, fn func(t1, t2 int64, v []byte) bool) {
	if from > to {
		return
	}
	last := w.segOf(to)
	for seg := w.segOf(from); seg <= last; {
		p := segPrefix(seg, key)
		lo := segKey(seg, key, from, math.MinInt64)
		stop := false
		w.s.bs.scan(lo, prefixEnd(p), func(k, v []byte) bool {
			_, _, t1, t2 := parseSegKey(k)
			if t1 > to || !fn(t1, t2, v) {
				stop = true
				return false
			}
			return true
		})
		if stop || seg == math.MaxInt64 {
			return
		}
		next, ok := w.nextSegment(seg + 1)
		if !ok {
			return
		}
		seg = next
	}
}

// nextSegment is the first segment at or after seg holding any entry.
func (w segmented) nextSegment(seg int64) (int64, bool) {
	found, ok := int64(0), false
	w.s.bs.scan(segStart(seg), nil, func(k, _ []byte) bool {
		found, ok = fromOrderable(binary.BigEndian.Uint64(k)), true
		return false
	})
	return found, ok
}

// expire drops segments entirely older than streamTime - retention.
func (w segmented) expire(streamTime int64) {
	if streamTime == noStreamTime || streamTime-w.s.spec.retention < 0 {
		return
	}
	limit := w.segOf(streamTime-w.s.spec.retention) - 1 // last whole segment to drop
	if limit < w.minSegment() {
		return
	}
	// The local store drops whole segments; the changelog is compacted
	// and Kafka Streams' changelogs of windowed stores are also retained by
	// time (compact,delete), so restored stores expire the same way.
	w.s.bs.deleteRange(nil, segStart(limit+1))
}

func (w segmented) minSegment() int64 {
	var first int64 = math.MaxInt64
	w.s.bs.scan(nil, nil, func(k, _ []byte) bool {
		first = fromOrderable(binary.BigEndian.Uint64(k))
		return false
	})
	return first
}
