package storage

import (
	"crypto/md5"
	"encoding/binary"
)

// offsetMapSlotSize is the memory one entry takes: a 16-byte MD5 digest of
// the key and an 8-byte offset, as in Kafka's SkimpyOffsetMap.
const offsetMapSlotSize = md5.Size + 8

// offsetMapLoadFactor is log.cleaner.io.buffer.load.factor's default: the
// fraction of slots that may be used before the map counts as full.
const offsetMapLoadFactor = 0.9

// offsetMap maps a record key to the latest offset at which it was seen in
// the dirty section of a log (Kafka's OffsetMap). Keys are stored as MD5
// digests, so two keys colliding would lose one's older values; like Kafka
// we accept that 2^-128 risk in exchange for fixed-size entries.
//
// Memory is bounded by log.cleaner.dedupe.buffer.size: the table starts
// small and doubles as it fills, but never beyond maxSlots, and put refuses
// new keys once maxEntries are used (the cleaner then stops the pass there
// and cleans the rest in a later pass).
//
// Layout: slots is a flat open-addressing table of offsetMapSlotSize-byte
// slots, probed linearly; a slot's offset is stored plus one so that an
// all-zero slot means empty.
//
// Thread-safety: none; one cleaning pass owns it.
type offsetMap struct {
	slots      []byte
	used       int
	maxSlots   int
	maxEntries int
	latest     int64 // largest offset put, -1 if none
}

// newOffsetMap returns a map of at most memoryBytes that counts as full at
// loadFactor of its slots (log.cleaner.io.buffer.load.factor; the default
// when <= 0 or above 1). The table grows at offsetMapLoadFactor whatever
// the limit, which only affects when it doubles.
func newOffsetMap(memoryBytes int64, loadFactor float64) *offsetMap {
	if !(loadFactor > 0 && loadFactor <= 1) {
		loadFactor = offsetMapLoadFactor
	}
	maxSlots := int(max(memoryBytes/offsetMapSlotSize, 2))
	m := &offsetMap{maxSlots: maxSlots, maxEntries: max(int(float64(maxSlots)*loadFactor), 1), latest: -1}
	m.slots = make([]byte, min(maxSlots, 1024)*offsetMapSlotSize)
	return m
}

func (m *offsetMap) numSlots() int { return len(m.slots) / offsetMapSlotSize }

// size is the number of distinct keys held.
func (m *offsetMap) size() int { return m.used }

// canTake reports whether n more keys are sure to fit.
func (m *offsetMap) canTake(n int) bool { return m.used+n <= m.maxEntries }

// find returns the slot index holding digest, or the empty slot where it
// would go.
func (m *offsetMap) find(slots []byte, digest *[md5.Size]byte) int {
	n := len(slots) / offsetMapSlotSize
	i := int(binary.BigEndian.Uint64(digest[:8]) % uint64(n))
	for {
		s := slots[i*offsetMapSlotSize : (i+1)*offsetMapSlotSize]
		if binary.BigEndian.Uint64(s[md5.Size:]) == 0 || [md5.Size]byte(s[:md5.Size]) == *digest {
			return i
		}
		if i++; i == n {
			i = 0
		}
	}
}

// put records offset as the latest for key. It returns false, changing
// nothing, if key is new and the map is full.
func (m *offsetMap) put(key []byte, offset int64) bool {
	digest := md5.Sum(key)
	i := m.find(m.slots, &digest)
	s := m.slots[i*offsetMapSlotSize:]
	if binary.BigEndian.Uint64(s[md5.Size:]) == 0 {
		if m.used >= m.maxEntries {
			return false
		}
		if float64(m.used+1) > float64(m.numSlots())*offsetMapLoadFactor && m.numSlots() < m.maxSlots {
			m.grow()
			i = m.find(m.slots, &digest)
			s = m.slots[i*offsetMapSlotSize:]
		}
		copy(s, digest[:])
		m.used++
	}
	binary.BigEndian.PutUint64(s[md5.Size:], uint64(offset)+1)
	m.latest = max(m.latest, offset)
	return true
}

// get returns the latest offset recorded for key.
func (m *offsetMap) get(key []byte) (int64, bool) {
	digest := md5.Sum(key)
	i := m.find(m.slots, &digest)
	v := binary.BigEndian.Uint64(m.slots[i*offsetMapSlotSize+md5.Size:])
	if v == 0 {
		return -1, false
	}
	return int64(v - 1), true
}

// grow doubles the table (up to maxSlots) and rehashes every entry.
func (m *offsetMap) grow() {
	next := make([]byte, min(2*m.numSlots(), m.maxSlots)*offsetMapSlotSize)
	for i := 0; i < m.numSlots(); i++ {
		s := m.slots[i*offsetMapSlotSize : (i+1)*offsetMapSlotSize]
		if binary.BigEndian.Uint64(s[md5.Size:]) == 0 {
			continue
		}
		digest := [md5.Size]byte(s[:md5.Size])
		j := m.find(next, &digest)
		copy(next[j*offsetMapSlotSize:], s)
	}
	m.slots = next
}
