package metadata

import (
	"sync"
	"sync/atomic"
)

// Publisher holds the latest applied Image and tells subscribers about each
// change. It is the part of a Log that does not depend on how records are
// committed: LocalLog uses it today and a Raft FSM can use it unchanged.
//
// Thread-safety: Image is lock-free (atomic.Pointer) and safe from any
// goroutine. Publish must be called by one goroutine at a time (the log's
// apply path), in offset order. Subscribers are called from a single
// dispatcher goroutine, in publish order, never while a Log lock is held; a
// subscriber may therefore call Commit, but a slow subscriber delays later
// notifications (not commits).
type Publisher struct {
	current atomic.Pointer[Image]

	mu struct {
		sync.Mutex
		subs    []func(old, new *Image) // replaced, never modified, on Subscribe
		pending []imageChange
		closed  bool
	}
	wake chan struct{} // buffered 1: pending is non-empty or closed
	done chan struct{} // closed when the dispatcher exits
}

type imageChange struct {
	old, new *Image
	subs     []func(old, new *Image)
}

// NewPublisher starts a publisher whose current image is initial.
func NewPublisher(initial *Image) *Publisher {
	p := &Publisher{wake: make(chan struct{}, 1), done: make(chan struct{})}
	p.current.Store(initial)
	go p.dispatch()
	return p
}

// Image returns the latest published image.
func (p *Publisher) Image() *Image { return p.current.Load() }

// Publish makes img the current image and queues a notification to the
// subscribers registered now.
func (p *Publisher) Publish(img *Image) {
	old := p.current.Swap(img)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed || len(p.mu.subs) == 0 {
		return
	}
	p.mu.pending = append(p.mu.pending, imageChange{old: old, new: img, subs: p.mu.subs})
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Subscribe registers fn for every change published from now on.
func (p *Publisher) Subscribe(fn func(old, new *Image)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	subs := make([]func(old, new *Image), 0, len(p.mu.subs)+1)
	subs = append(subs, p.mu.subs...)
	p.mu.subs = append(subs, fn)
}

// Close delivers the notifications already queued, then stops the
// dispatcher. Later Publish calls still update Image but notify no one.
func (p *Publisher) Close() {
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		<-p.done
		return
	}
	p.mu.closed = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	<-p.done
}

func (p *Publisher) dispatch() {
	defer close(p.done)
	for range p.wake {
		p.mu.Lock()
		batch, closed := p.mu.pending, p.mu.closed
		p.mu.pending = nil
		p.mu.Unlock()
		for _, c := range batch {
			for _, fn := range c.subs {
				fn(c.old, c.new)
			}
		}
		if closed {
			return
		}
	}
}
