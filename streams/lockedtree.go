package streams

import (
	"sync"

	"github.com/google/btree"
)

// lockedTree is the in-memory store's tree and the lock that guards it. The
// owning task writes; interactive queries read from other goroutines.
type lockedTree struct {
	sync.RWMutex
	t *btree.BTreeG[kvItem]
}
