package cli

import (
	"math"
	"math/bits"
	"sync"
	"time"
)

// subBucketBits sets the number of linear buckets per power of two. 64 gives a
// worst-case relative error of 1/64 ≈ 1.6%, enough for latency percentiles.
const subBucketBits = 6

// latencyHistogram is an HDR-style log-linear histogram of durations in
// microseconds: values below 2^subBucketBits get exact buckets, larger
// values share 2^subBucketBits buckets per power of two. Memory is fixed
// (32 KiB) whatever the number of samples.
//
// It is safe for concurrent use: producers record from franz-go's
// promise goroutines while the progress reporter reads.
type latencyHistogram struct {
	mu struct {
		sync.Mutex
		counts [64 << subBucketBits]uint64 // guarded by mu
		total  uint64
		max    int64
	}
}

// bucketOf maps v >= 0 to its bucket index.
func bucketOf(v int64) int {
	if v < 1<<subBucketBits {
		return int(v)
	}
	exp := bits.Len64(uint64(v)) - 1 - subBucketBits // v>>exp is in [2^s, 2^(s+1))
	return (exp+1)<<subBucketBits + int(uint64(v)>>exp) - 1<<subBucketBits
}

// bucketUpper is the largest value stored in bucket i; reporting it keeps
// percentiles conservative (never below the true value).
func bucketUpper(i int) int64 {
	if i < 1<<subBucketBits {
		return int64(i)
	}
	exp := i>>subBucketBits - 1
	mant := int64(i&(1<<subBucketBits-1)) + 1<<subBucketBits
	return (mant+1)<<exp - 1
}

// Record adds one sample; negative durations count as zero.
func (h *latencyHistogram) Record(d time.Duration) {
	us := max(d.Microseconds(), 0)
	h.mu.Lock()
	h.mu.counts[bucketOf(us)]++
	h.mu.total++
	h.mu.max = max(h.mu.max, us)
	h.mu.Unlock()
}

// Count is the number of samples.
func (h *latencyHistogram) Count() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.total
}

// Max is the largest sample.
func (h *latencyHistogram) Max() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return time.Duration(h.mu.max) * time.Microsecond
}

// Quantile returns the value at quantile q in [0,1]: the smallest bucket
// bound with at least ceil(q*count) samples at or below it.
func (h *latencyHistogram) Quantile(q float64) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.mu.total)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.mu.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(bucketUpper(i), h.mu.max)) * time.Microsecond
		}
	}
	return time.Duration(h.mu.max) * time.Microsecond
}
