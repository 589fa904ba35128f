package controller

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
)

// WaitBrokersApplied waits until every live broker (registered, unfenced and
// not in controlled shutdown, in the current image) has reported in a
// heartbeat that it applied the metadata up to offset, or ctx ends. It
// returns the ids of the brokers still behind and ctx's error in the latter
// case, and NOT_CONTROLLER if this node stops being the active controller.
//
// KRaft answers an admin request once its records are committed and lets
// each broker catch up on its own; Vltava also waits for the brokers, so a
// client that asks any broker right after CreateTopics (or DeleteTopics,
// CreatePartitions) returns sees the change. The offsets come from the
// brokers' heartbeats, which they send early, as soon as they have applied
// a new image (Lifecycle), so the wait is a round trip, not a heartbeat
// interval. A broker that has just been fenced or begun shutting down is
// dropped from the wait by the image change that records it.
func (a *Active) WaitBrokersApplied(ctx context.Context, offset int64) (lagging []int32, err error) {
	for {
		img := a.o.Quorum.Image()
		a.mu.Lock()
		if !a.mu.active {
			a.mu.Unlock()
			return nil, a.notActive()
		}
		lagging = lagging[:0]
		for _, b := range img.Brokers() {
			if !b.Active() {
				continue
			}
			s, ok := a.mu.sessions[b.ID]
			if !ok || s.epoch != b.Epoch || s.appliedOffset < offset {
				lagging = append(lagging, b.ID)
			}
		}
		changed := a.mu.appliedChanged
		a.mu.Unlock()
		if len(lagging) == 0 {
			return nil, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			slices.Sort(lagging)
			return lagging, fmt.Errorf("%w: brokers %v have not applied metadata offset %d: %w", kerr.RequestTimedOut, lagging, offset, ctx.Err())
		}
	}
}

// signalAppliedLocked wakes WaitBrokersApplied callers. a.mu must be held.
func (a *Active) signalAppliedLocked() {
	close(a.mu.appliedChanged)
	a.mu.appliedChanged = make(chan struct{})
}

// AppliedOffset is the metadata offset a broker has applied to its
// partitions, as its Lifecycle reports it to the controller, with a
// one-slot notification of every advance so the Lifecycle can report it at
// once. Advances coalesce: however many images are applied while a
// heartbeat is in flight, one more heartbeat follows it, carrying the
// latest offset.
//
// Thread-safety: safe for concurrent use.
type AppliedOffset struct {
	offset   atomic.Int64
	advanced chan struct{}
}

// NewAppliedOffset returns an AppliedOffset at -1 (nothing applied).
func NewAppliedOffset() *AppliedOffset {
	o := &AppliedOffset{advanced: make(chan struct{}, 1)}
	o.offset.Store(-1)
	return o
}

// Advance records that the metadata up to offset is applied. An offset at
// or below the current one changes nothing.
func (o *AppliedOffset) Advance(offset int64) {
	for {
		cur := o.offset.Load()
		if offset <= cur {
			return
		}
		if o.offset.CompareAndSwap(cur, offset) {
			break
		}
	}
	select {
	case o.advanced <- struct{}{}:
	default: // a notification is already pending: it covers this one
	}
}

// Load returns the applied offset.
func (o *AppliedOffset) Load() int64 { return o.offset.Load() }

// Advanced is signalled after Advance moves the offset.
func (o *AppliedOffset) Advanced() <-chan struct{} { return o.advanced }
