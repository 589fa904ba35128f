package tiered

import (
	"math"
	"testing"
	"time"
)

func TestQuotaLimitsTheRateOverItsWindows(t *testing.T) {
	now := time.Unix(1000, 0)
	q := NewQuota(1000, 11, time.Second, func() time.Time { return now })
	if ex, _ := q.Exceeded(); ex {
		t.Fatal("an unused quota is exceeded")
	}
	// 10,000 bytes at once: over 10 s (num-1 windows) that is 1,000 B/s,
	// at the limit, not above it.
	q.Record(10_000)
	if ex, _ := q.Exceeded(); ex {
		t.Fatal("exactly the limit counts as exceeded")
	}
	q.Record(1)
	ex, wait := q.Exceeded()
	if !ex {
		t.Fatal("10,001 bytes in one window of an 11 × 1 s quota of 1,000 B/s is not exceeded")
	}
	if wait <= 0 || wait > 11*time.Second {
		t.Fatalf("wait %v, want until the window holding the bytes has passed (≤ 11 s)", wait)
	}
	// Once every window holding them has passed, work may go on.
	now = now.Add(wait)
	if ex, _ := q.Exceeded(); ex {
		t.Fatalf("still exceeded %v later", wait)
	}
	// A steady 900 B/s stays under the limit; 1,200 B/s goes over.
	for range 30 {
		now = now.Add(time.Second)
		q.Record(900)
	}
	if ex, _ := q.Exceeded(); ex {
		t.Fatal("900 B/s against a 1,000 B/s quota is exceeded")
	}
	for range 30 {
		now = now.Add(time.Second)
		q.Record(1200)
	}
	if ex, _ := q.Exceeded(); !ex {
		t.Fatal("1,200 B/s against a 1,000 B/s quota is not exceeded")
	}
}

func TestQuotaDefaultIsNoLimitAndTheLimitChanges(t *testing.T) {
	now := time.Unix(1000, 0)
	q := NewQuota(math.MaxInt64, 2, time.Second, func() time.Time { return now })
	q.Record(1 << 40)
	if ex, _ := q.Exceeded(); ex {
		t.Fatal("Long.MAX_VALUE limits")
	}
	// Set at run time (a dynamic broker config): the bytes recorded
	// count against the new limit, and lifting it frees the work at once.
	q.SetLimit(1 << 20)
	if ex, _ := q.Exceeded(); !ex {
		t.Fatal("1 TiB in a second under a new 1 MiB/s limit is not exceeded")
	}
	q.SetLimit(math.MaxInt64)
	if ex, _ := q.Exceeded(); ex {
		t.Fatal("lifting the limit leaves it exceeded")
	}
	var none *Quota
	none.Record(1)
	if ex, _ := none.Exceeded(); ex {
		t.Fatal("a nil quota limits")
	}
}
