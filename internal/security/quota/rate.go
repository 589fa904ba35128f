package quota

import (
	"math"
	"time"
)

// Window is Kafka's quota measurement window: quota.window.num samples of
// quota.window.size.seconds each (defaults 11 and 1).
type Window struct {
	Samples int
	Size    time.Duration
}

// DefaultWindow is Kafka's default window.
var DefaultWindow = Window{Samples: 11, Size: time.Second}

// MaxThrottle is the longest throttle Kafka imposes: the whole window
// (ClientQuotaManager.maxThrottleTimeMs).
func (w Window) MaxThrottle() time.Duration { return time.Duration(w.Samples) * w.Size }

// rate is Kafka's Rate over a SampledStat: the sum of the values recorded
// in the last Samples samples, divided by the time they span. A sample
// starts when the first value after the previous one's end is recorded
// (samples are not aligned to the clock), and expires Samples×Size after
// it started. Not safe for concurrent use: a sensor's lock guards it.
type rate struct {
	w       Window
	current int
	samples []sample
}

type sample struct {
	start time.Time // zero: never used
	value float64
}

func newRate(w Window) *rate { return &rate{w: w, samples: make([]sample, w.Samples)} }

// record adds v at now (Kafka's SampledStat.record).
func (r *rate) record(v float64, now time.Time) {
	s := &r.samples[r.current]
	if s.start.IsZero() {
		s.start = now
	} else if now.Sub(s.start) >= r.w.Size {
		r.current = (r.current + 1) % len(r.samples)
		s = &r.samples[r.current]
		*s = sample{start: now}
	}
	s.value += v
}

// purge resets samples that have expired (Kafka's purgeObsoleteSamples).
func (r *rate) purge(now time.Time) {
	expire := time.Duration(len(r.samples)) * r.w.Size
	for i := range r.samples {
		if s := &r.samples[i]; !s.start.IsZero() && now.Sub(s.start) >= expire {
			*s = sample{}
		}
	}
}

// windowSize is Kafka's Rate.windowSize: the time since the oldest live
// sample started, but at least Samples-1 whole samples, so a first burst
// is spread over most of the window rather than over the moment it took.
func (r *rate) windowSize(now time.Time) time.Duration {
	r.purge(now)
	oldest := now
	for _, s := range r.samples {
		if !s.start.IsZero() && s.start.Before(oldest) {
			oldest = s.start
		}
	}
	elapsed := now.Sub(oldest)
	if min := time.Duration(len(r.samples)-1) * r.w.Size; elapsed < min {
		elapsed = min
	}
	return elapsed
}

// measure is the rate per second at now.
func (r *rate) measure(now time.Time) float64 {
	size := r.windowSize(now)
	var total float64
	for _, s := range r.samples {
		total += s.value
	}
	return total / size.Seconds()
}

// throttleTime is Kafka's QuotaUtils.throttleTime: how long the client
// must wait for the measured rate to fall to the bound, (value - bound) /
// bound × window, capped at the window's length; 0 within the bound.
func throttleTime(value, bound float64, window, maxThrottle time.Duration) time.Duration {
	if value <= bound || bound <= 0 && value <= 0 {
		return 0
	}
	if bound <= 0 {
		return maxThrottle
	}
	ms := math.Round((value - bound) / bound * float64(window.Milliseconds()))
	d := time.Duration(ms) * time.Millisecond
	return min(d, maxThrottle)
}

// tokenBucket is Kafka's TokenBucket (KIP-599), the controller mutation
// quota's measure: up to Samples×Size seconds' worth of the rate in
// credit, refilled at the rate; a recording may take it below zero, and
// the debt is the throttle.
type tokenBucket struct {
	tokens float64
	last   time.Time
}

// refill brings the bucket to now for rate and its burst.
func (b *tokenBucket) refill(rate float64, w Window, now time.Time) {
	burst := rate * float64(w.Samples) * w.Size.Seconds()
	if b.last.IsZero() {
		b.tokens = burst
	} else {
		b.tokens = min(burst, b.tokens+rate*now.Sub(b.last).Seconds())
	}
	b.last = now
}

// throttle is the time until the debt is repaid.
func (b *tokenBucket) throttle(rate float64) time.Duration {
	if b.tokens >= 0 {
		return 0
	}
	if rate <= 0 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(math.Round(-b.tokens/rate*1000)) * time.Millisecond
}
