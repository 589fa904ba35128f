package s3

import (
	"container/list"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// chunkCache keeps fetched log chunks as files in a local directory, least
// recently used evicted past its size. The lock covers only the index: file
// reads and writes happen outside it.
type chunkCache struct {
	dir   string
	limit int64

	mu    sync.Mutex
	size  int64
	lru   *list.List // of *cacheEntry, front = most recent
	index map[cacheKey]*list.Element
}

type cacheKey struct {
	id    [16]byte
	chunk int
}

type cacheEntry struct {
	key  cacheKey
	size int64
}

func newChunkCache(dir string, limit int64) (*chunkCache, error) {
	// Chunks from an earlier run are not trusted to match this run's
	// bookkeeping: start empty.
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("fetch.chunk.cache.path %s: %w", dir, err)
	}
	return &chunkCache{dir: dir, limit: limit, lru: list.New(), index: map[cacheKey]*list.Element{}}, nil
}

func (c *chunkCache) path(k cacheKey) string {
	return filepath.Join(c.dir, fmt.Sprintf("%s-%d", base64.RawURLEncoding.EncodeToString(k.id[:]), k.chunk))
}

func (c *chunkCache) get(id [16]byte, chunk int) ([]byte, bool) {
	k := cacheKey{id, chunk}
	c.mu.Lock()
	e, ok := c.index[k]
	if ok {
		c.lru.MoveToFront(e)
	}
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	b, err := os.ReadFile(c.path(k))
	if err != nil {
		return nil, false
	}
	return b, true
}

func (c *chunkCache) put(id [16]byte, chunk int, b []byte) {
	k := cacheKey{id, chunk}
	if int64(len(b)) > c.limit {
		return
	}
	tmp := c.path(k) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return
	}
	if err := os.Rename(tmp, c.path(k)); err != nil {
		os.Remove(tmp)
		return
	}
	var evict []cacheKey
	c.mu.Lock()
	if e, ok := c.index[k]; ok {
		c.size -= e.Value.(*cacheEntry).size
		c.lru.Remove(e)
	}
	c.index[k] = c.lru.PushFront(&cacheEntry{key: k, size: int64(len(b))})
	c.size += int64(len(b))
	for c.size > c.limit {
		e := c.lru.Back()
		ce := e.Value.(*cacheEntry)
		c.lru.Remove(e)
		delete(c.index, ce.key)
		c.size -= ce.size
		evict = append(evict, ce.key)
	}
	c.mu.Unlock()
	for _, ek := range evict {
		os.Remove(c.path(ek))
	}
}

func (c *chunkCache) drop(id [16]byte) {
	var gone []cacheKey
	c.mu.Lock()
	for k, e := range c.index {
		if k.id == id {
			c.size -= e.Value.(*cacheEntry).size
			c.lru.Remove(e)
			delete(c.index, k)
			gone = append(gone, k)
		}
	}
	c.mu.Unlock()
	for _, k := range gone {
		os.Remove(c.path(k))
	}
}
