package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
	bolt "go.etcd.io/bbolt"
)

// raftStore is raft's LogStore and StableStore in one bbolt file, raft.db,
// like hashicorp/raft-boltdb/v2 (whose v2.3.1 does not build against raft
// v1.8.0: it imports go-metrics/compat, which go-metrics v0.7.0, required by
// raft v1.8.0, removed). It uses the same bbolt version that raft-boltdb
// v2.3.1 pins.
//
// On-disk format: two buckets.
//
//	"logs":   key = index (uint64 big-endian, so bolt's byte order is index
//	          order), value = encodeRaftEntry (below)
//	"stable": key = raft's key bytes (currentTerm, lastVoteTerm, ...),
//	          value = raw bytes; SetUint64 stores 8 bytes big-endian
//
// Every write is one bolt transaction, fsynced at commit, so an entry raft
// considers stored survives a crash (raft acknowledges AppendEntries only
// after StoreLogs returns).
//
// Thread-safety: safe for concurrent use (bolt serializes writers and allows
// concurrent readers).
type raftStore struct {
	db *bolt.DB
}

var (
	bucketLogs   = []byte("logs")
	bucketStable = []byte("stable")
)

// errRaftKeyNotFound is what StableStore.Get returns for a missing key. raft
// compares the message ("not found"), not the value, when it reads its
// current term at start, so the text must not change.
var errRaftKeyNotFound = errors.New("not found")

var (
	_ raft.LogStore    = (*raftStore)(nil)
	_ raft.StableStore = (*raftStore)(nil)
)

func openRaftStore(path string) (*raftStore, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second, NoFreelistSync: true})
	if err != nil {
		return nil, fmt.Errorf("metadata: opening raft store %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketLogs, bucketStable} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("metadata: initializing raft store %s: %w", path, err)
	}
	return &raftStore{db: db}, nil
}

func (s *raftStore) Close() error { return s.db.Close() }

func indexKey(i uint64) []byte { return binary.BigEndian.AppendUint64(nil, i) }

// FirstIndex implements raft.LogStore; 0 means no entries.
func (s *raftStore) FirstIndex() (uint64, error) {
	var idx uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketLogs).Cursor().First(); k != nil {
			idx = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return idx, err
}

// LastIndex implements raft.LogStore; 0 means no entries.
func (s *raftStore) LastIndex() (uint64, error) {
	var idx uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketLogs).Cursor().Last(); k != nil {
			idx = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return idx, err
}

// GetLog implements raft.LogStore.
func (s *raftStore) GetLog(index uint64, out *raft.Log) error {
	return s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketLogs).Get(indexKey(index))
		if v == nil {
			return raft.ErrLogNotFound
		}
		// decodeRaftEntry copies: v is only valid inside the transaction.
		if err := decodeRaftEntry(v, out); err != nil {
			return fmt.Errorf("raft log index %d: %w", index, err)
		}
		out.Index = index
		return nil
	})
}

// StoreLog implements raft.LogStore.
func (s *raftStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs implements raft.LogStore: all entries in one transaction.
func (s *raftStore) StoreLogs(logs []*raft.Log) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLogs)
		for _, l := range logs {
			if err := b.Put(indexKey(l.Index), encodeRaftEntry(l)); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteRange implements raft.LogStore (inclusive on both ends).
func (s *raftStore) DeleteRange(lo, hi uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketLogs).Cursor()
		for k, _ := c.Seek(indexKey(lo)); k != nil; k, _ = c.Next() {
			if binary.BigEndian.Uint64(k) > hi {
				break
			}
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// Set implements raft.StableStore.
func (s *raftStore) Set(key, val []byte) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketStable).Put(key, val)
	})
}

// Get implements raft.StableStore.
func (s *raftStore) Get(key []byte) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketStable).Get(key)
		if v == nil {
			return errRaftKeyNotFound
		}
		out = append([]byte(nil), v...)
		return nil
	})
	return out, err
}

// SetUint64 implements raft.StableStore.
func (s *raftStore) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 implements raft.StableStore.
func (s *raftStore) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("metadata: raft stable key %q holds %d bytes, want 8", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// A stored raft entry is
//
//	[term u64][type u8][appendedAt unix nanos i64][len u32][data][len u32][extensions]
//
// (the index is the key), all big-endian.
const raftEntryHeader = 8 + 1 + 8

func encodeRaftEntry(l *raft.Log) []byte {
	b := make([]byte, 0, raftEntryHeader+8+len(l.Data)+len(l.Extensions))
	b = binary.BigEndian.AppendUint64(b, l.Term)
	b = append(b, byte(l.Type))
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Extensions)))
	return append(b, l.Extensions...)
}

func decodeRaftEntry(b []byte, out *raft.Log) error {
	corrupt := fmt.Errorf("%w: raft log entry of %d bytes", kerr.CorruptMessage, len(b))
	if len(b) < raftEntryHeader+4 {
		return corrupt
	}
	term := binary.BigEndian.Uint64(b)
	typ := raft.LogType(b[8])
	at := int64(binary.BigEndian.Uint64(b[9:]))
	rest := b[raftEntryHeader:]
	data, rest, ok := cutLenPrefixed(rest)
	if !ok {
		return corrupt
	}
	ext, rest, ok := cutLenPrefixed(rest)
	if !ok || len(rest) != 0 {
		return corrupt
	}
	*out = raft.Log{Term: term, Type: typ, Data: data, Extensions: ext}
	if at != 0 {
		out.AppendedAt = time.Unix(0, at)
	}
	return nil
}

// cutLenPrefixed splits a u32-length-prefixed field off b, copying it (nil
// when empty).
func cutLenPrefixed(b []byte) (field, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	if uint64(len(b)) < uint64(n) {
		return nil, nil, false
	}
	if n > 0 {
		field = append([]byte(nil), b[:n]...)
	}
	return field, b[n:], true
}
