package metrics

import "sync/atomic"

// msBuckets are the upper bounds, in milliseconds, of the request and flush
// time histograms: sub-millisecond produces up to the longest fetch
// long-poll Kafka clients use (fetch.max.wait.ms of 30 s and more land in
// +Inf).
var msBuckets = [...]float64{0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000}

// histogram is a fixed-bucket histogram updated with atomic adds only; the
// scrape reads it without stopping writers, so a scrape may see a count
// one observation ahead of a bucket, which Prometheus tolerates.
type histogram struct {
	buckets [len(msBuckets)]atomic.Uint64 // non-cumulative
	count   atomic.Uint64
	sumNs   atomic.Uint64
}

func (h *histogram) observeNs(ns int64) {
	if ns < 0 {
		ns = 0
	}
	ms := float64(ns) / 1e6
	for i, b := range msBuckets {
		if ms <= b {
			h.buckets[i].Add(1)
			break
		}
	}
	h.count.Add(1)
	h.sumNs.Add(uint64(ns))
}

// snapshot returns the cumulative bucket counts, the count and the sum in
// milliseconds, as prometheus.MustNewConstHistogram takes them.
func (h *histogram) snapshot() (count uint64, sumMs float64, buckets map[float64]uint64) {
	buckets = make(map[float64]uint64, len(msBuckets))
	var cum uint64
	for i, b := range msBuckets {
		cum += h.buckets[i].Load()
		buckets[b] = cum
	}
	count = max(h.count.Load(), cum)
	return count, float64(h.sumNs.Load()) / 1e6, buckets
}

// empty reports whether nothing was observed.
func (h *histogram) empty() bool { return h.count.Load() == 0 }
