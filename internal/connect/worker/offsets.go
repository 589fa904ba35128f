package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// OffsetEntry is one source partition's offset; a nil Offset removes it.
type OffsetEntry struct {
	Partition map[string]any `json:"partition"`
	Offset    map[string]any `json:"offset"`
}

// OffsetStore keeps source connectors' offsets.
type OffsetStore interface {
	// Get returns the partition's offset, or nil.
	Get(connector string, partition map[string]any) (map[string]any, error)
	// Put stores offsets; they are durable when it returns nil.
	Put(ctx context.Context, connector string, entries []OffsetEntry) error
	// All returns every offset of the connector.
	All(connector string) ([]OffsetEntry, error)
}

// OffsetKey is the offset key in Kafka Connect's format: the JSON array
// ["<connector>", {partition}] (JsonConverter, schemas disabled).
func OffsetKey(connector string, partition map[string]any) ([]byte, error) {
	return json.Marshal([]any{connector, partition})
}

// ParseOffsetKey reads an OffsetKey.
func ParseOffsetKey(b []byte) (string, map[string]any, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || len(raw) != 2 {
		return "", nil, fmt.Errorf("offset key %q is not [connector, partition]", b)
	}
	var name string
	if err := json.Unmarshal(raw[0], &name); err != nil {
		return "", nil, fmt.Errorf("offset key %q: %w", b, err)
	}
	var part map[string]any
	if err := decodeJSON(raw[1], &part); err != nil {
		return "", nil, fmt.Errorf("offset key %q: %w", b, err)
	}
	return name, part, nil
}

// decodeJSON decodes with numbers kept as int64 when integral (as Kafka's
// JsonConverter gives Long), float64 otherwise.
func decodeJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if m, ok := v.(*map[string]any); ok {
		normNumbers(*m)
	}
	return nil
}

func normNumbers(m map[string]any) {
	for k, v := range m {
		m[k] = normValue(v)
	}
}

func normValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		normNumbers(x)
	case []any:
		for i := range x {
			x[i] = normValue(x[i])
		}
	}
	return v
}

// ParseOffsetValue reads an offset value ({offset} JSON; nil for a tombstone).
func ParseOffsetValue(b []byte) (map[string]any, error) {
	if b == nil {
		return nil, nil
	}
	var off map[string]any
	if err := decodeJSON(b, &off); err != nil {
		return nil, fmt.Errorf("offset value %q: %w", b, err)
	}
	return off, nil
}

// MemoryOffsets is an in-memory offset map, the state FileOffsets and the
// topic store keep.
type MemoryOffsets struct {
	mu sync.Mutex // guards data
	// data maps the OffsetKey bytes to the offset value bytes.
	data map[string][]byte
}

// NewMemoryOffsets returns an empty store.
func NewMemoryOffsets() *MemoryOffsets { return &MemoryOffsets{data: map[string][]byte{}} }

// Get implements OffsetStore.
func (m *MemoryOffsets) Get(connector string, partition map[string]any) (map[string]any, error) {
	k, err := OffsetKey(connector, partition)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	v := m.data[string(k)]
	m.mu.Unlock()
	return ParseOffsetValue(v)
}

// Apply sets raw key/value pairs (a nil value deletes), as read back from a
// file or topic.
func (m *MemoryOffsets) Apply(key, value []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if value == nil {
		delete(m.data, string(key))
		return
	}
	m.data[string(key)] = value
}

// Put implements OffsetStore (in memory only).
func (m *MemoryOffsets) Put(_ context.Context, connector string, entries []OffsetEntry) error {
	kvs, err := encodeEntries(connector, entries)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		m.Apply(kv[0], kv[1])
	}
	return nil
}

func encodeEntries(connector string, entries []OffsetEntry) ([][2][]byte, error) {
	out := make([][2][]byte, 0, len(entries))
	for _, e := range entries {
		k, err := OffsetKey(connector, e.Partition)
		if err != nil {
			return nil, err
		}
		var v []byte
		if e.Offset != nil {
			if v, err = json.Marshal(e.Offset); err != nil {
				return nil, err
			}
		}
		out = append(out, [2][]byte{k, v})
	}
	return out, nil
}

// All implements OffsetStore.
func (m *MemoryOffsets) All(connector string) ([]OffsetEntry, error) {
	m.mu.Lock()
	keys := make([]string, 0, len(m.data))
	for k := range m.data {
		keys = append(keys, k)
	}
	vals := make(map[string][]byte, len(keys))
	for _, k := range keys {
		vals[k] = m.data[k]
	}
	m.mu.Unlock()
	sort.Strings(keys)
	var out []OffsetEntry
	for _, k := range keys {
		name, part, err := ParseOffsetKey([]byte(k))
		if err != nil || name != connector {
			continue
		}
		off, err := ParseOffsetValue(vals[k])
		if err != nil {
			return nil, err
		}
		out = append(out, OffsetEntry{Partition: part, Offset: off})
	}
	return out, nil
}

func (m *MemoryOffsets) snapshot() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]string, len(m.data))
	for k, v := range m.data {
		out[k] = string(v)
	}
	return out
}

// FileOffsets is standalone mode's offset.storage.file.filename: the
// offsets as a JSON object of Kafka Connect's offset keys to offset values,
// rewritten atomically (temp file, fsync, rename) on every flush.
type FileOffsets struct {
	*MemoryOffsets
	path string
	wmu  sync.Mutex // serialises file writes; never held with MemoryOffsets.mu
}

// OpenFileOffsets loads the file (absent: empty).
func OpenFileOffsets(path string) (*FileOffsets, error) {
	f := &FileOffsets{MemoryOffsets: NewMemoryOffsets(), path: path}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return f, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: not an offsets file: %w", path, err)
	}
	for k, v := range m {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		f.Apply([]byte(k), []byte(s))
	}
	return f, nil
}

// Put implements OffsetStore: memory, then the file.
func (f *FileOffsets) Put(ctx context.Context, connector string, entries []OffsetEntry) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if err := f.MemoryOffsets.Put(ctx, connector, entries); err != nil {
		return err
	}
	b, err := json.Marshal(f.snapshot())
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), filepath.Base(f.path)+".tmp")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), f.path)
}
