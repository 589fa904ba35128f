package broker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestProducerIDBlockFetchIsSharedAndHoldsNoLock checks the next-block
// fetch: concurrent callers share one controller call, get distinct ids,
// and a caller whose request ends while the call is in flight returns at
// once instead of queueing behind it.
func TestProducerIDBlockFetchIsSharedAndHoldsNoLock(t *testing.T) {
	var pb producerIDBlock
	release := make(chan struct{})
	var calls atomic.Int32
	allocate := func(ctx context.Context) (int64, int32, error) {
		n := calls.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
		return int64(n) * 1000, 1000, nil
	}

	const callers = 50
	ids := make(chan int64, callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := pb.nextID(context.Background(), allocate)
			if err != nil {
				t.Error(err)
				return
			}
			ids <- id
		}()
	}
	// One more caller whose request ends while the fetch is blocked.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := pb.nextID(ctx, allocate); !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("a caller whose request ended: %v, want REQUEST_TIMED_OUT", err)
	}
	close(release)
	wg.Wait()
	close(ids)
	seen := map[int64]bool{}
	for id := range ids {
		if seen[id] {
			t.Fatalf("producer id %d handed out twice", id)
		}
		seen[id] = true
	}
	if len(seen) != callers {
		t.Fatalf("%d ids for %d callers", len(seen), callers)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d controller calls for one block, want 1", n)
	}
}
