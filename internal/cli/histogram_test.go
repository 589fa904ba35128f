package cli

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketRoundTrip(t *testing.T) {
	// Every value must land in a bucket whose upper bound is >= the value
	// and within the histogram's relative precision.
	for _, v := range []int64{0, 1, 63, 64, 65, 127, 128, 1000, 123456, 1 << 40, 1<<62 + 12345} {
		b := bucketOf(v)
		up := bucketUpper(b)
		if up < v {
			t.Errorf("value %d: bucket %d upper %d is below it", v, b, up)
		}
		if float64(up-v) > float64(v)/float64(1<<subBucketBits)+1 {
			t.Errorf("value %d: bucket upper %d exceeds precision", v, up)
		}
		if b > 0 && bucketUpper(b-1) >= v {
			t.Errorf("value %d: previous bucket %d already covers it", v, b-1)
		}
	}
}

func TestQuantilesMatchSortedSamples(t *testing.T) {
	var h latencyHistogram
	rng := rand.New(rand.NewPCG(1, 2))
	var samples []int64
	for range 20000 {
		us := int64(rng.ExpFloat64() * 2000)
		samples = append(samples, us)
		h.Record(time.Duration(us) * time.Microsecond)
	}
	slices.Sort(samples)
	for _, q := range []float64{0.5, 0.95, 0.99, 0.999} {
		exact := samples[int(q*float64(len(samples)))-1]
		got := h.Quantile(q).Microseconds()
		if got < exact || float64(got) > float64(exact)*1.02+1 {
			t.Errorf("q%.3f: got %dµs, exact %dµs", q, got, exact)
		}
	}
	if h.Max().Microseconds() != samples[len(samples)-1] {
		t.Errorf("max %v, want %dµs", h.Max(), samples[len(samples)-1])
	}
	if h.Count() != 20000 {
		t.Errorf("count %d", h.Count())
	}
}

func TestEmptyHistogram(t *testing.T) {
	var h latencyHistogram
	if h.Quantile(0.99) != 0 || h.Max() != 0 || h.Count() != 0 {
		t.Fatal("empty histogram must report zeros")
	}
}
