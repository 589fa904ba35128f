package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/controller/rules"
)

// LifecycleOptions configures a broker's Lifecycle.
type LifecycleOptions struct {
	Registration rules.Registration
	Client       *Client
	// MetadataOffset returns the offset of the metadata this broker has
	// applied (reported in heartbeats: the controller unfences a broker
	// only once it has caught up).
	MetadataOffset func() int64
	// MetadataApplied, if set, is signalled when MetadataOffset advances
	// (AppliedOffset.Advanced): a registered broker then heartbeats at
	// once instead of at the next interval, so the controller learns
	// promptly that a change is applied here (admin requests wait for
	// that, see Active.WaitBrokersApplied).
	MetadataApplied <-chan struct{}
	// HeartbeatInterval is broker.heartbeat.interval.ms.
	HeartbeatInterval time.Duration
	Logger            *slog.Logger
	// OfflineDirs, when set, reports the broker's failed log dirs for
	// the heartbeat and the replicas in them still to move away
	// (lifecycle_offline_dirs.go).
	OfflineDirs func() OfflineDirs
}

// Lifecycle is a broker's side of KIP-631's broker lifecycle (Kafka's
// BrokerLifecycleManager): it registers with the active controller, sends
// a heartbeat every broker.heartbeat.interval.ms (more often while fenced,
// so a starting broker is unfenced as soon as it has caught up, and at once
// when it has applied new metadata, see MetadataApplied), registers
// again if the controller forgot it (STALE_BROKER_EPOCH, e.g. after being
// fenced under a new incarnation rule), and on a clean stop asks for a
// controlled shutdown.
//
// Thread-safety: safe for concurrent use; mu guards the state the loop
// shares with callers.
type Lifecycle struct {
	o      LifecycleOptions
	logger *slog.Logger

	mu struct {
		sync.Mutex
		epoch        int64 // -1 until registered
		fenced       bool
		wantShutdown bool
		shutdownOK   bool
	}
	changed chan struct{} // closed and replaced when state changes
	poke    chan struct{} // send a heartbeat now
	stop    chan struct{}
	done    chan struct{}
}

// StartLifecycle starts registering and heartbeating.
func StartLifecycle(o LifecycleOptions) *Lifecycle {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = 2 * time.Second
	}
	l := &Lifecycle{o: o, logger: o.Logger, changed: make(chan struct{}), poke: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	l.mu.epoch = -1
	l.mu.fenced = true
	go l.run()
	return l
}

// BrokerEpoch returns the current registration epoch (-1 before the first
// registration).
func (l *Lifecycle) BrokerEpoch() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.epoch
}

// Fenced reports whether the controller last answered that this broker is
// fenced.
func (l *Lifecycle) Fenced() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.fenced
}

// waitFor waits until cond holds (checked under mu) or ctx ends.
func (l *Lifecycle) waitFor(ctx context.Context, cond func() bool) error {
	for {
		l.mu.Lock()
		ok, ch := cond(), l.changed
		l.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-l.done:
			return errors.New("broker lifecycle stopped")
		}
	}
}

// WaitUnfenced waits until the controller has unfenced this broker, which
// the node does before it serves clients (Kafka's broker waits likewise).
func (l *Lifecycle) WaitUnfenced(ctx context.Context) error {
	return l.waitFor(ctx, func() bool { return l.mu.epoch >= 0 && !l.mu.fenced })
}

// ControlledShutdown asks the controller to move this broker's leaderships
// away and waits until it agrees the broker may stop, or ctx ends (then
// the broker stops anyway; its session will expire).
func (l *Lifecycle) ControlledShutdown(ctx context.Context) error {
	l.mu.Lock()
	l.mu.wantShutdown = true
	l.mu.Unlock()
	l.pokeNow()
	return l.waitFor(ctx, func() bool { return l.mu.shutdownOK || l.mu.epoch < 0 })
}

// Close stops heartbeating.
func (l *Lifecycle) Close() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
}

func (l *Lifecycle) pokeNow() {
	select {
	case l.poke <- struct{}{}:
	default:
	}
}

// updateLocked applies fn and wakes waiters.
func (l *Lifecycle) update(fn func()) {
	l.mu.Lock()
	fn()
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

func (l *Lifecycle) run() {
	defer close(l.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		wait := l.step(ctx)
		if !l.sleep(time.Now(), wait) {
			return
		}
	}
}

// minReportGap spaces the heartbeats sent early to report applied metadata:
// under a burst of metadata changes a broker reports at most this often,
// the latest offset each time, instead of once per change.
const minReportGap = 5 * time.Millisecond

// sleep waits until wait has passed since the last step (at last), or less
// when poked, or when new metadata is applied while registered (an
// unregistered broker has nothing to report, and its registration retries
// keep their pace), then no sooner than minReportGap after the last step.
// It returns false once stopped. Heartbeats are sent one at a time from
// this loop, so a broker never has more than one in flight.
func (l *Lifecycle) sleep(last time.Time, wait time.Duration) bool {
	deadline := last.Add(wait)
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		select {
		case <-l.stop:
			return false
		case <-l.poke:
			return true
		case <-timer.C:
			return true
		case <-l.o.MetadataApplied:
			if l.BrokerEpoch() < 0 {
				continue
			}
			if early := last.Add(minReportGap); early.Before(deadline) {
				deadline = early
				timer.Reset(time.Until(deadline))
			}
		}
	}
}

// step registers or heartbeats once and returns how long to wait before
// the next step.
func (l *Lifecycle) step(ctx context.Context) time.Duration {
	fast := min(l.o.HeartbeatInterval, 100*time.Millisecond)
	rpcCtx, cancel := context.WithTimeout(ctx, max(l.o.HeartbeatInterval, time.Second))
	defer cancel()
	l.mu.Lock()
	epoch, wantShutdown := l.mu.epoch, l.mu.wantShutdown
	l.mu.Unlock()
	if epoch < 0 {
		if wantShutdown {
			l.update(func() { l.mu.shutdownOK = true })
			return l.o.HeartbeatInterval
		}
		res, err := l.o.Client.Register(rpcCtx, l.o.Registration)
		if err != nil {
			if ctx.Err() == nil {
				l.logger.Warn("broker registration failed; retrying", "err", err)
			}
			return fast
		}
		l.o.Client.SetBrokerEpoch(res.BrokerEpoch)
		l.update(func() { l.mu.epoch, l.mu.fenced = res.BrokerEpoch, true })
		l.logger.Info("registered with the controller", "broker_epoch", res.BrokerEpoch)
		return 0
	}
	offline := l.offlineDirs()
	res, err := l.o.Client.Heartbeat(rpcCtx, Heartbeat{
		BrokerID: l.o.Registration.BrokerID, BrokerEpoch: epoch,
		CurrentMetadataOffset: l.o.MetadataOffset(), WantShutDown: wantShutdown,
		OfflineLogDirs: offline.DirIDs,
	})
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke) && (ke == kerr.StaleBrokerEpoch || ke == kerr.BrokerIDNotRegistered):
		l.logger.Warn("controller no longer knows this registration; registering again", "err", err)
		l.update(func() { l.mu.epoch, l.mu.fenced = -1, true })
		return 0
	case err != nil && wantShutdown:
		// No controller answers (the quorum is shutting down too, or
		// lost): nobody can move the leaderships, so stop without it; the
		// session expiry of a future controller fences this broker.
		l.logger.Warn("no controller reachable for the controlled shutdown; stopping without it", "err", err)
		l.update(func() { l.mu.shutdownOK = true })
		return fast
	case err != nil:
		if ctx.Err() == nil {
			l.logger.Warn("broker heartbeat failed", "err", err)
		}
		return fast
	}
	l.moveOfflineReplicas(rpcCtx, epoch, offline)
	l.update(func() {
		if l.mu.fenced != res.IsFenced {
			l.logger.Info("broker fencing changed", "fenced", res.IsFenced)
		}
		l.mu.fenced = res.IsFenced
		l.mu.shutdownOK = l.mu.shutdownOK || res.ShouldShutDown
	})
	if wantShutdown {
		return 20 * time.Millisecond
	}
	if res.IsFenced {
		return fast
	}
	return l.o.HeartbeatInterval
}

// String describes the state, for logs.
func (l *Lifecycle) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("epoch=%d fenced=%v shutdown=%v", l.mu.epoch, l.mu.fenced, l.mu.wantShutdown)
}
