package lag

import (
	"sort"
	"sync"
	"time"
)

// Evaluator samples every group's lag on an interval
// (metrics.consumer.lag.sample.interval.ms) into a window per partition and
// keeps the last evaluation, which the collector, /v1/consumer-lag and the
// CLI read. One goroutine owns the sampling; mu guards what it publishes.
type Evaluator struct {
	computer *Computer
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex // guards windows and latest
	windows map[windowKey][]sample
	latest  []GroupLag

	stop chan struct{}
	done chan struct{}
}

type windowKey struct {
	group, topic string
	partition    int32
}

// NewEvaluator returns an evaluator sampling c every interval.
func NewEvaluator(c *Computer, interval time.Duration) *Evaluator {
	return &Evaluator{computer: c, interval: interval, now: time.Now, windows: map[windowKey][]sample{},
		stop: make(chan struct{}), done: make(chan struct{})}
}

// Start runs the sampler until Close.
func (e *Evaluator) Start() {
	go func() {
		defer close(e.done)
		t := time.NewTicker(e.interval)
		defer t.Stop()
		e.Sample()
		for {
			select {
			case <-t.C:
				e.Sample()
			case <-e.stop:
				return
			}
		}
	}()
}

// Close stops the sampler.
func (e *Evaluator) Close() {
	close(e.stop)
	<-e.done
}

// Sample takes one sample of every group and re-evaluates the statuses.
func (e *Evaluator) Sample() {
	now := e.now()
	groups := e.computer.Compute(now) // reads logs: outside mu
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := make(map[windowKey]bool, len(e.windows))
	for gi := range groups {
		g := &groups[gi]
		for pi := range g.Partitions {
			p := &g.Partitions[pi]
			k := windowKey{g.Group, p.Topic, p.Partition}
			seen[k] = true
			w := append(e.windows[k], sample{at: now, offset: p.CurrentOffset, lag: p.Lag})
			if len(w) > windowSize {
				w = w[len(w)-windowSize:]
			}
			e.windows[k] = w
			p.Status = evaluate(w, now)
		}
		g.Status = groupStatus(g.Partitions)
	}
	for k := range e.windows {
		if !seen[k] {
			delete(e.windows, k)
		}
	}
	e.latest = groups
}

// Current returns the lag computed now, with the statuses of the last
// sample (a partition not sampled yet is NOTFOUND): offsets and lag are
// always current, only the status rules wait for the window.
func (e *Evaluator) Current() []GroupLag {
	now := e.now()
	groups := e.computer.Compute(now)
	e.mu.Lock()
	status := make(map[windowKey]Status)
	groupSt := make(map[string]Status)
	for _, g := range e.latest {
		groupSt[g.Group] = g.Status
		for _, p := range g.Partitions {
			status[windowKey{g.Group, p.Topic, p.Partition}] = p.Status
		}
	}
	e.mu.Unlock()
	for gi := range groups {
		g := &groups[gi]
		for pi := range g.Partitions {
			p := &g.Partitions[pi]
			p.Status = status[windowKey{g.Group, p.Topic, p.Partition}]
		}
		g.Status = groupSt[g.Group]
		sort.Slice(g.Partitions, func(i, j int) bool {
			a, b := g.Partitions[i], g.Partitions[j]
			return a.Topic < b.Topic || (a.Topic == b.Topic && a.Partition < b.Partition)
		})
	}
	return groups
}
