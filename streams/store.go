package streams

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/btree"
)

// StoreBackend selects how a state store keeps its bytes.
type StoreBackend int

const (
	// Pebble keeps the store in a github.com/cockroachdb/pebble database
	// under state.dir (Kafka Streams' RocksDB role). The default.
	Pebble StoreBackend = iota
	// InMemory keeps the store in an ordered in-memory tree (Kafka Streams'
	// Stores.inMemoryKeyValueStore). Both backends are restored from the
	// changelog after a restart.
	InMemory
)

// String names the backend.
func (b StoreBackend) String() string {
	switch b {
	case Pebble:
		return "pebble"
	case InMemory:
		return "in-memory"
	}
	return fmt.Sprintf("StoreBackend(%d)", int(b))
}

// byteStore is the bytes-level store every typed store and DSL processor
// sits on. It is owned by one task (one goroutine); it is not safe for
// concurrent use, except that reads for interactive queries go through
// readView, which the backends serve concurrently (pebble natively, the
// tree under its own lock).
type byteStore interface {
	get(k []byte) ([]byte, bool)
	// put stores v under k; v == nil deletes k.
	put(k, v []byte)
	// scan calls fn for keys in [from, to) in order (nil bounds are open)
	// until fn returns false.
	scan(from, to []byte, fn func(k, v []byte) bool)
	// deleteRange removes keys in [from, to).
	deleteRange(from, to []byte)
	close() error
}

// storeError is raised (as a panic) by a backend failing underneath a
// processor; the task runner recovers it and fails the thread, as Kafka
// Streams' ProcessorStateException does.
type storeError struct{ err error }

func (e storeError) Error() string { return e.err.Error() }

func must(err error) {
	if err != nil {
		panic(storeError{err})
	}
}

// memStore is the InMemory backend: a B-tree of copied keys and values.
type memStore struct {
	mu lockedTree
}

type kvItem struct{ k, v []byte }

func kvLess(a, b kvItem) bool { return bytes.Compare(a.k, b.k) < 0 }

func newMemStore() *memStore {
	s := &memStore{}
	s.mu.t = btree.NewG[kvItem](32, kvLess)
	return s
}

func (s *memStore) get(k []byte) ([]byte, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	it, ok := s.mu.t.Get(kvItem{k: k})
	return it.v, ok
}

func (s *memStore) put(k, v []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v == nil {
		s.mu.t.Delete(kvItem{k: k})
		return
	}
	s.mu.t.ReplaceOrInsert(kvItem{k: bytes.Clone(k), v: bytes.Clone(v)})
}

func (s *memStore) scan(from, to []byte, fn func(k, v []byte) bool) {
	// Items are copied out in chunks under the read lock and fn is called
	// outside it, since fn may write to the store.
	const chunk = 128
	cur := from
	skipFirst := false
	for {
		items := make([]kvItem, 0, chunk)
		s.mu.RLock()
		visit := func(it kvItem) bool {
			if skipFirst && bytes.Equal(it.k, cur) {
				return true
			}
			if to != nil && bytes.Compare(it.k, to) >= 0 {
				return false
			}
			items = append(items, it)
			return len(items) < chunk
		}
		if cur == nil {
			s.mu.t.Ascend(visit)
		} else {
			s.mu.t.AscendGreaterOrEqual(kvItem{k: cur}, visit)
		}
		s.mu.RUnlock()
		for _, it := range items {
			if !fn(it.k, it.v) {
				return
			}
		}
		if len(items) < chunk {
			return
		}
		cur, skipFirst = items[len(items)-1].k, true
	}
}

func (s *memStore) deleteRange(from, to []byte) {
	var keys [][]byte
	s.scan(from, to, func(k, _ []byte) bool { keys = append(keys, k); return true })
	for _, k := range keys {
		s.put(k, nil)
	}
}

func (s *memStore) close() error { return nil }

// pebbleStore is the Pebble backend: one database directory per store and
// task under state.dir/<application.id>/<task>/<store>.
type pebbleStore struct {
	db *pebble.DB
	wo *pebble.WriteOptions
}

func openPebbleStore(dir string) (*pebbleStore, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietPebbleLogger{}})
	if err != nil {
		return nil, fmt.Errorf("streams: opening store %s: %w", dir, err)
	}
	// The changelog, not the local write-ahead log, is the store's
	// durability: a crashed store is wiped and restored from it.
	return &pebbleStore{db: db, wo: pebble.NoSync}, nil
}

func (s *pebbleStore) get(k []byte) ([]byte, bool) {
	v, closer, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false
	}
	must(err)
	out := bytes.Clone(v)
	must(closer.Close())
	return out, true
}

func (s *pebbleStore) put(k, v []byte) {
	if v == nil {
		must(s.db.Delete(k, s.wo))
		return
	}
	must(s.db.Set(k, v, s.wo))
}

func (s *pebbleStore) scan(from, to []byte, fn func(k, v []byte) bool) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: from, UpperBound: to})
	must(err)
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if !fn(bytes.Clone(it.Key()), bytes.Clone(it.Value())) {
			break
		}
	}
	must(it.Error())
}

func (s *pebbleStore) deleteRange(from, to []byte) {
	if from == nil {
		from = []byte{}
	}
	if to == nil {
		var last []byte
		s.scan(from, nil, func(k, _ []byte) bool { last = k; return true })
		if last == nil {
			return
		}
		to = append(last, 0)
	}
	must(s.db.DeleteRange(from, to, s.wo))
}

func (s *pebbleStore) close() error { return s.db.Close() }

type quietPebbleLogger struct{}

func (quietPebbleLogger) Infof(string, ...any)  {}
func (quietPebbleLogger) Errorf(string, ...any) {}
func (quietPebbleLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}
