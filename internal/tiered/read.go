package tiered

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/record"
)

// Read returns whole record batches of a partition's remote tier starting
// with the one holding offset: at most maxBytes of them, but at least one
// whole batch when minOneBatch. An offset below the remote tier's start is
// OFFSET_OUT_OF_RANGE; one past it (held locally) is ErrOffsetNotRemote.
func (m *Manager) Read(ctx context.Context, p *partition.Partition, offset int64, maxBytes int, minOneBatch bool) ([]byte, error) {
	segs := m.Meta.Segments(p.TopicID, p.Index, CopyFinished)
	var md *SegmentMetadata
	for i := range segs {
		if segs[i].StartOffset <= offset && offset <= segs[i].EndOffset {
			md = &segs[i]
			break
		}
	}
	if md == nil {
		if len(segs) == 0 || offset < segs[0].StartOffset {
			return nil, fmt.Errorf("%w: offset %d is below the log start", kerr.OffsetOutOfRange, offset)
		}
		return nil, ErrOffsetNotRemote
	}
	if over, _ := m.FetchQuota.Exceeded(); over {
		return []byte{}, nil
	}
	m.FetchRequests.Add(1)
	out, err := m.read(ctx, *md, offset, maxBytes, minOneBatch)
	if err != nil {
		m.FetchErrors.Add(1)
		return nil, err
	}
	m.BytesFetched.Add(int64(len(out)))
	m.FetchQuota.Record(int64(len(out)))
	return out, nil
}

func (m *Manager) read(ctx context.Context, md SegmentMetadata, offset int64, maxBytes int, minOneBatch bool) ([]byte, error) {
	pos, err := m.position(ctx, md, offset)
	if err != nil {
		return nil, err
	}
	window := int64(max(maxBytes, 64<<10))
	for {
		data, err := fetchRange(ctx, m.Store, md, pos, pos+window-1)
		if err != nil {
			return nil, err
		}
		out, needMore, err := wholeBatches(data, offset, maxBytes, minOneBatch)
		if err != nil {
			return nil, fmt.Errorf("%w: %s at position %d: %v", ErrCorrupt, md.SegmentID, pos, err)
		}
		if needMore == 0 || int64(len(data)) < window {
			return out, nil
		}
		window = max(window*2, int64(needMore))
	}
}

func fetchRange(ctx context.Context, st RemoteStorage, md SegmentMetadata, from, to int64) ([]byte, error) {
	rc, err := st.FetchSegment(ctx, md, from, to)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	// Sized for the range at once: io.ReadAll would grow and copy its
	// buffer a dozen times for a megabyte.
	var buf bytes.Buffer
	buf.Grow(int(min(to-from+1, 64<<20)))
	if _, err := buf.ReadFrom(rc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// wholeBatches picks from data (starting at a batch boundary) the batches
// from the one holding offset on, up to maxBytes. needMore > 0 says data is
// cut before the first wanted batch ends (or before the header that says
// whether it is wanted), and how many bytes from its start it must hold.
func wholeBatches(data []byte, offset int64, maxBytes int, minOneBatch bool) (out []byte, needMore int, err error) {
	start, end := -1, 0
	for pos := 0; ; {
		if len(data)-pos < record.BatchHeaderSize {
			if start < 0 {
				return []byte{}, pos + record.BatchHeaderSize, nil
			}
			break
		}
		h, err := record.ParseHeader(data[pos:])
		if err != nil {
			return nil, 0, err
		}
		if h.Length < record.BatchHeaderSize-12 || h.Length > 1<<30 {
			return nil, 0, fmt.Errorf("batch length %d", h.Length)
		}
		size := 12 + int(h.Length)
		if h.LastOffset() < offset {
			pos += size
			continue
		}
		if start < 0 {
			start = pos
		}
		if pos+size > len(data) {
			if pos == start && (minOneBatch || size <= maxBytes) {
				return []byte{}, pos + size, nil
			}
			break
		}
		if pos+size-start > maxBytes && !(pos == start && minOneBatch) {
			break
		}
		end = pos + size
		pos += size
	}
	if start < 0 || end <= start {
		return []byte{}, 0, nil
	}
	return data[start:end], 0, nil
}

// position finds where the batch holding offset starts in the segment,
// through its offset index (fetched once and cached).
func (m *Manager) position(ctx context.Context, md SegmentMetadata, offset int64) (int64, error) {
	idx, err := m.index.get(ctx, m.Store, md)
	if err != nil {
		return 0, err
	}
	rel := offset - md.StartOffset
	pos := int64(0)
	for i := 0; i+8 <= len(idx); i += 8 {
		ro := int64(binary.BigEndian.Uint32(idx[i:]))
		p := int64(binary.BigEndian.Uint32(idx[i+4:]))
		if i > 0 && ro == 0 && p == 0 {
			break // preallocated, unused space
		}
		if ro > rel {
			break
		}
		pos = p
	}
	return pos, nil
}

// indexCache keeps fetched offset indexes in memory, a bounded number.
type indexCache struct {
	mu      sync.Mutex
	entries map[[16]byte][]byte
}

const maxCachedIndexes = 1024

func (c *indexCache) get(ctx context.Context, st RemoteStorage, md SegmentMetadata) ([]byte, error) {
	c.mu.Lock()
	b, ok := c.entries[md.ID]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	rc, err := st.FetchIndex(ctx, md, OffsetIndex)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err = io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[[16]byte][]byte{}
	}
	if len(c.entries) >= maxCachedIndexes {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[md.ID] = b
	c.mu.Unlock()
	return b, nil
}

func (c *indexCache) drop(id [16]byte) {
	c.mu.Lock()
	delete(c.entries, id)
	c.mu.Unlock()
}
