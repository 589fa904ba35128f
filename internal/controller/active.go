// Package controller runs the controller duties of a Vltava node and the
// broker side of the broker-to-controller channel, like KRaft's
// QuorumController and BrokerLifecycleManager:
//
//   - Active runs on every controller (raft voter) and does its work only
//     while the node is the raft leader: broker sessions (registration,
//     heartbeats, fencing on broker.session.timeout.ms, unfencing once caught
//     up, controlled shutdown), completion of reassignments, and preferred
//     leader balancing (auto.leader.rebalance.enable).
//   - Client is every broker's path to the active controller: a local call
//     when this node leads the quorum, otherwise a Kafka-protocol request to
//     the leader's quorum address (controller.quorum.voters), where every
//     controller, dedicated or combined, serves the controller APIs behind
//     quorum.ControllerRPCByte; it implements the partition package's
//     ControllerClient (AlterPartition) and forwards admin requests.
//   - Lifecycle registers this broker, heartbeats, and performs a controlled
//     shutdown.
//
// The rules themselves (who leads, what an ISR change may do) live in
// internal/metadata's Controller; this package only decides when to apply
// them.
package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
)

// Quorum is the metadata log as the controller sees it; *quorum.RaftLog
// implements it.
type Quorum interface {
	Image() *metadata.Image
	Subscribe(fn func(old, new *metadata.Image))
	IsLeader() bool
	LeaderID() (int32, bool)
	LeaderCh() <-chan bool
}

// ActiveOptions configures Active.
type ActiveOptions struct {
	NodeID     int32
	Quorum     Quorum
	Controller *rules.Controller
	// SessionTimeout is broker.session.timeout.ms.
	SessionTimeout time.Duration
	// RebalanceInterval is leader.imbalance.check.interval.seconds; 0
	// disables automatic preferred leader elections
	// (auto.leader.rebalance.enable=false).
	RebalanceInterval time.Duration
	// ImbalancePct is leader.imbalance.per.broker.percentage.
	ImbalancePct int32
	// ClusterID is this node's id from meta.properties, committed as the
	// cluster's id if the metadata has none yet.
	ClusterID string
	Logger    *slog.Logger
}

// Heartbeat is a BrokerHeartbeat request.
type Heartbeat struct {
	BrokerID              int32
	BrokerEpoch           int64
	CurrentMetadataOffset int64
	WantFence             bool
	WantShutDown          bool
	// OfflineLogDirs are the directory ids of the broker's failed log
	// dirs (KIP-858); offline_dirs.go acts on them.
	OfflineLogDirs [][16]byte
}

// HeartbeatResult is the controller's answer to a heartbeat.
type HeartbeatResult struct {
	IsCaughtUp     bool
	IsFenced       bool
	ShouldShutDown bool
}

// session is what the active controller knows of one broker's liveness.
type session struct {
	epoch       int64
	lastContact time.Time
	// caughtUpOffset is the metadata offset the broker must have applied
	// to be unfenced: its registration record's.
	caughtUpOffset int64
	// shutdownOffset is the offset that moved its leaderships away, once
	// it asked to shut down (-1 before).
	shutdownOffset int64
	// offlineDirs is the OfflineLogDirs of the last heartbeat.
	offlineDirs [][16]byte
	// appliedOffset is the metadata offset the broker reported in its
	// latest heartbeat (-1 before one): admin requests wait on it (see
	// WaitBrokersApplied).
	appliedOffset int64
}

// Active is the controller-duty runner of one controller node. Its methods
// answer NOT_CONTROLLER unless the node is the raft leader.
//
// Thread-safety: safe for concurrent use. mu guards the session table and
// the activation state; it is never held across a metadata commit, except
// that heartbeat handling for one broker is serialized by hbMu so two
// heartbeats of one broker cannot both start a controlled shutdown.
type Active struct {
	o      ActiveOptions
	logger *slog.Logger

	hbMu sync.Mutex // serializes heartbeat and registration decisions

	mu struct {
		sync.Mutex
		active   bool
		cancel   context.CancelFunc
		sessions map[int32]*session
		// activatedAt is when this term started: brokers with no
		// session yet count as heard from then (Kafka does the same on
		// failover).
		activatedAt     time.Time
		activatedOffset int64
		// appliedChanged is closed and replaced whenever a broker
		// reports a new applied offset or the image changes (a broker
		// fenced or shutting down no longer counts), waking
		// WaitBrokersApplied.
		appliedChanged chan struct{}
	}
	wake chan struct{} // an image changed: look for reassignments to finish
	stop chan struct{}
	done chan struct{}
}

// NewActive starts watching the quorum's leadership.
func NewActive(o ActiveOptions) *Active {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 9 * time.Second
	}
	a := &Active{o: o, logger: o.Logger, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	a.mu.sessions = map[int32]*session{}
	a.mu.appliedChanged = make(chan struct{})
	o.Quorum.Subscribe(func(_, _ *metadata.Image) {
		select {
		case a.wake <- struct{}{}:
		default:
		}
		a.mu.Lock()
		a.signalAppliedLocked()
		a.mu.Unlock()
	})
	go a.run()
	return a
}

// Close stops the duties.
func (a *Active) Close() {
	close(a.stop)
	<-a.done
}

// IsActive reports whether this node currently runs the controller duties.
func (a *Active) IsActive() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mu.active && a.o.Quorum.IsLeader()
}

func (a *Active) run() {
	defer close(a.done)
	defer a.deactivate()
	if a.o.Quorum.IsLeader() {
		a.activate()
	}
	leaderCh := a.o.Quorum.LeaderCh()
	for {
		select {
		case <-a.stop:
			return
		case isLeader := <-leaderCh:
			if isLeader {
				a.activate()
			} else {
				a.deactivate()
			}
		}
	}
}

func (a *Active) activate() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.active {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.mu.active, a.mu.cancel = true, cancel
	a.mu.sessions = map[int32]*session{}
	a.mu.activatedAt = time.Now()
	a.mu.activatedOffset = a.o.Quorum.Image().Offset()
	a.logger.Info("became the active controller", "node", a.o.NodeID)
	go a.duties(ctx)
}

func (a *Active) deactivate() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.mu.active {
		return
	}
	a.mu.active = false
	a.mu.cancel()
	a.signalAppliedLocked() // waiters end with NOT_CONTROLLER
	a.logger.Info("no longer the active controller", "node", a.o.NodeID)
}

// duties runs while this node is the active controller: session expiry,
// reassignment completion and leader balancing.
func (a *Active) duties(ctx context.Context) {
	check := min(max(a.o.SessionTimeout/8, 20*time.Millisecond), time.Second)
	expiry := time.NewTicker(check)
	defer expiry.Stop()
	var rebalance <-chan time.Time
	if a.o.RebalanceInterval > 0 {
		t := time.NewTicker(a.o.RebalanceInterval)
		defer t.Stop()
		rebalance = t.C
	}
	if a.o.ClusterID != "" {
		a.withTimeout(ctx, func(ctx context.Context) error {
			_, err := a.o.Controller.EnsureClusterID(ctx, a.o.ClusterID)
			return err
		}, "committing the cluster id")
	}
	a.withTimeout(ctx, a.o.Controller.EnsureFeatures, "finalizing the bootstrap feature levels (KIP-584)")
	a.completeReassignments(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-expiry.C:
			a.expireSessions(ctx)
		case <-a.wake:
			a.completeReassignments(ctx)
		case <-rebalance:
			a.withTimeout(ctx, func(ctx context.Context) error {
				_, err := a.o.Controller.BalanceLeaders(ctx, a.o.ImbalancePct)
				return err
			}, "leader rebalance")
		}
	}
}

// withTimeout runs one controller operation with a bounded context and logs
// its failure.
func (a *Active) withTimeout(ctx context.Context, op func(context.Context) error, what string, attrs ...any) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := op(ctx); err != nil && ctx.Err() == nil {
		a.logger.Warn(what+" failed", append(attrs, "err", err)...)
	}
}

func (a *Active) completeReassignments(ctx context.Context) {
	img := a.o.Quorum.Image()
	pending := false
	for _, t := range img.Topics() {
		for _, p := range t.Partitions {
			pending = pending || p.Reassigning()
		}
	}
	if !pending {
		return
	}
	a.withTimeout(ctx, func(ctx context.Context) error {
		_, err := a.o.Controller.CompleteReassignments(ctx)
		return err
	}, "completing reassignments")
}

// expireSessions fences every unfenced broker not heard from within the
// session timeout.
func (a *Active) expireSessions(ctx context.Context) {
	img := a.o.Quorum.Image()
	now := time.Now()
	var expired []metadata.BrokerImage
	a.mu.Lock()
	for _, b := range img.Brokers() {
		if b.Fenced {
			continue
		}
		last := a.mu.activatedAt
		if s, ok := a.mu.sessions[b.ID]; ok && s.epoch == b.Epoch {
			last = s.lastContact
		}
		if now.Sub(last) > a.o.SessionTimeout {
			expired = append(expired, b)
		}
	}
	a.mu.Unlock()
	for _, b := range expired {
		a.logger.Warn("broker session expired; fencing", "broker", b.ID, "epoch", b.Epoch, "timeout", a.o.SessionTimeout)
		a.withTimeout(ctx, func(ctx context.Context) error {
			return a.o.Controller.FenceBroker(ctx, b.ID, b.Epoch)
		}, "fencing broker", "broker", b.ID)
	}
}

func (a *Active) notActive() error {
	if id, ok := a.o.Quorum.LeaderID(); ok {
		return fmt.Errorf("%w: node %d is not the active controller; %d is", kerr.NotController, a.o.NodeID, id)
	}
	return fmt.Errorf("%w: no active controller", kerr.NotController)
}

// Register handles a BrokerRegistration. A different incarnation of a broker
// whose session is still alive is refused with DUPLICATE_BROKER_REGISTRATION
// (two processes claiming one node.id), as in Kafka; this node's own id is
// exempt, since its previous incarnation cannot be running.
func (a *Active) Register(ctx context.Context, reg rules.Registration) (rules.RegistrationResult, error) {
	if !a.IsActive() {
		return rules.RegistrationResult{}, a.notActive()
	}
	a.hbMu.Lock()
	defer a.hbMu.Unlock()
	img := a.o.Quorum.Image()
	if old, ok := img.Broker(reg.BrokerID); ok && old.IncarnationID != reg.IncarnationID && !old.Fenced && reg.BrokerID != a.o.NodeID {
		a.mu.Lock()
		last := a.mu.activatedAt
		if s, ok := a.mu.sessions[reg.BrokerID]; ok && s.epoch == old.Epoch {
			last = s.lastContact
		}
		a.mu.Unlock()
		if time.Since(last) <= a.o.SessionTimeout {
			return rules.RegistrationResult{}, fmt.Errorf("%w: another broker is registered with id %d and its session has not expired", kerr.DuplicateBrokerRegistration, reg.BrokerID)
		}
	}
	res, err := a.o.Controller.Register(ctx, reg)
	if err != nil {
		return res, err
	}
	a.mu.Lock()
	a.mu.sessions[reg.BrokerID] = &session{epoch: res.BrokerEpoch, lastContact: time.Now(), caughtUpOffset: res.Offset, shutdownOffset: -1, appliedOffset: -1}
	a.mu.Unlock()
	return res, nil
}

// Heartbeat handles a BrokerHeartbeat: it renews the broker's session,
// unfences it once it has applied its registration, and drives its
// controlled shutdown (KIP-631): the first heartbeat with WantShutDown moves
// its leaderships away; once the broker has applied that change the
// controller fences it and answers ShouldShutDown.
func (a *Active) Heartbeat(ctx context.Context, hb Heartbeat) (HeartbeatResult, error) {
	if !a.IsActive() {
		return HeartbeatResult{}, a.notActive()
	}
	a.hbMu.Lock()
	defer a.hbMu.Unlock()
	img := a.o.Quorum.Image()
	b, ok := img.Broker(hb.BrokerID)
	if !ok {
		return HeartbeatResult{}, fmt.Errorf("%w: broker %d is not registered", kerr.BrokerIDNotRegistered, hb.BrokerID)
	}
	if b.Epoch != hb.BrokerEpoch {
		return HeartbeatResult{}, fmt.Errorf("%w: broker %d epoch %d is not the registered %d", kerr.StaleBrokerEpoch, hb.BrokerID, hb.BrokerEpoch, b.Epoch)
	}
	a.mu.Lock()
	s, ok := a.mu.sessions[hb.BrokerID]
	if !ok || s.epoch != b.Epoch {
		// Registered under a previous controller: it must have applied
		// everything this controller had at activation.
		s = &session{epoch: b.Epoch, caughtUpOffset: a.mu.activatedOffset, shutdownOffset: -1, appliedOffset: -1}
		a.mu.sessions[hb.BrokerID] = s
	}
	s.lastContact = time.Now()
	s.offlineDirs = hb.OfflineLogDirs
	if hb.CurrentMetadataOffset != s.appliedOffset {
		s.appliedOffset = hb.CurrentMetadataOffset
		a.signalAppliedLocked()
	}
	caughtUpOffset, shutdownOffset := s.caughtUpOffset, s.shutdownOffset
	a.mu.Unlock()

	res := HeartbeatResult{IsCaughtUp: hb.CurrentMetadataOffset >= caughtUpOffset}
	var err error
	switch {
	case hb.WantShutDown && b.Fenced:
		res.ShouldShutDown = true
	case hb.WantShutDown:
		if !b.InControlledShutdown || shutdownOffset < 0 {
			var off int64
			if off, err = a.o.Controller.BeginControlledShutdown(ctx, b.ID, b.Epoch); err != nil {
				break
			}
			a.mu.Lock()
			s.shutdownOffset = off
			a.mu.Unlock()
			shutdownOffset = off
		}
		cur := a.o.Quorum.Image()
		if hb.CurrentMetadataOffset >= shutdownOffset && !rules.LeadsAnything(cur, b.ID) {
			if err = a.o.Controller.FenceBroker(ctx, b.ID, b.Epoch); err == nil {
				res.ShouldShutDown = true
				a.logger.Info("broker finished controlled shutdown", "broker", b.ID)
			}
		}
	case b.Fenced && !hb.WantFence && res.IsCaughtUp:
		err = a.o.Controller.UnfenceBroker(ctx, b.ID, b.Epoch)
	case !b.Fenced && hb.WantFence:
		err = a.o.Controller.FenceBroker(ctx, b.ID, b.Epoch)
	}
	if err != nil {
		return HeartbeatResult{}, err
	}
	now, _ := a.o.Quorum.Image().Broker(hb.BrokerID)
	res.IsFenced = now.Fenced
	return res, nil
}
