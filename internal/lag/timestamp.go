package lag

import (
	"context"
	"sync"

	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/record"
)

// timestampCache remembers the timestamp of the record at a committed
// offset: a group's committed offset changes far less often than it is
// scraped, and a record's timestamp never changes, so each (partition,
// offset) is read from the log once.
type timestampCache struct {
	mu sync.Mutex // guards m; never held across the log read
	m  map[stampKey]int64
}

type stampKey struct {
	topic     string
	partition int32
	offset    int64
}

// maxStamps bounds the cache; past it, it starts over.
const maxStamps = 1 << 16

// timestampAt is the timestamp (ms) of the first record at or after offset
// in p's committed log: the record the group reads next. It reads the one
// batch holding offset, located through the offset index. A compacted-away
// offset gives the next record's time, which is what the consumer will
// see.
func (c *timestampCache) timestampAt(p *partition.Partition, offset int64) (int64, bool) {
	return c.cached(stampKey{p.Topic, p.Index, offset}, func() (int64, bool) { return readTimestamp(p, offset) })
}

// timestampRemote is timestampAt for a partition hosted elsewhere, read
// from its leader.
func (c *timestampCache) timestampRemote(ctx context.Context, r Remote, topic string, partition int32, offset int64) (int64, bool) {
	return c.cached(stampKey{topic, partition, offset}, func() (int64, bool) {
		data, ok := r.Batches(ctx, topic, partition, offset)
		if !ok {
			return 0, false
		}
		return timestampIn(data, offset)
	})
}

func (c *timestampCache) cached(k stampKey, read func() (int64, bool)) (int64, bool) {
	c.mu.Lock()
	ts, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return ts, true
	}
	ts, ok = read()
	if !ok {
		return 0, false
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxStamps {
		c.m = make(map[stampKey]int64)
	}
	c.m[k] = ts
	c.mu.Unlock()
	return ts, true
}

func readTimestamp(p *partition.Partition, offset int64) (int64, bool) {
	res, err := p.Read(offset, 1, true)
	if err != nil {
		return 0, false
	}
	return timestampIn(res.Data, offset)
}

// timestampIn finds the timestamp of the first record at or after offset
// in whole record batches.
func timestampIn(data []byte, offset int64) (int64, bool) {
	for len(data) > 0 {
		hdr, batch, rest, err := record.NextBatch(data)
		if err != nil {
			return 0, false
		}
		data = rest
		if hdr.LastOffset() < offset || hdr.IsControl() {
			continue
		}
		if hdr.TimestampType() == record.LogAppendTime {
			return hdr.MaxTimestamp, true
		}
		_, recs, err := record.DecodeRecords(batch)
		if err != nil {
			return 0, false
		}
		for _, r := range recs {
			if hdr.BaseOffset+int64(r.OffsetDelta) >= offset {
				return hdr.FirstTimestamp + r.TimestampDelta, true
			}
		}
	}
	return 0, false
}
