package quorum

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// RaftStoreFile is the bbolt file holding raft's log and stable state under
// RaftConfig.Dir; snapshots live in Dir/snapshots (raft's FileSnapshotStore).
const RaftStoreFile = "raft.db"

// RaftConfig configures a RaftLog. Zero timeouts and thresholds mean
// hashicorp/raft's defaults.
type RaftConfig struct {
	// NodeID is node.id; it is the raft server id (in decimal).
	NodeID int32
	// Dir holds raft.db and snapshots/; created if missing.
	Dir string
	// BindAddr is the host:port raft listens on (the controller listener).
	// Ignored when Listener is set.
	BindAddr string
	// Listener, if set, is used instead of listening on BindAddr (tests
	// pass pre-bound loopback listeners). RaftLog closes it.
	Listener net.Listener
	// AdvertiseAddr is the host:port other nodes reach this one at. For a
	// voter it defaults to Voters[NodeID], otherwise to the listener's
	// address.
	AdvertiseAddr string
	// Voters is controller.quorum.voters: node id -> host:port. Empty for
	// a dynamic quorum (KIP-853), whose voters are in raft's configuration.
	Voters map[int32]string
	// Voter is true when process.roles contains "controller". In a static
	// quorum a voter with an empty store bootstraps the quorum with all
	// Voters; a non-voter (broker-only node) joins through the leader (see
	// raft_join.go).
	Voter bool
	// BootstrapServers is controller.quorum.bootstrap.servers (host:port
	// of controller listeners): set, with Voters empty, for a dynamic
	// quorum. A node that is not a voter of its raft configuration joins
	// as an observer through them.
	BootstrapServers []string
	// DirectoryID is the directory.id of the metadata log dir; with a
	// dynamic quorum it is part of this replica's key (raft_voters.go).
	DirectoryID metadata.Uuid
	// InitialVoters is the voter set written by storage format
	// (--standalone or --initial-controllers) for a dynamic quorum: an
	// empty store is bootstrapped with exactly these voters. Empty for a
	// node formatted with --no-initial-controllers, which joins as an
	// observer and becomes a voter when added (AddRaftVoter).
	InitialVoters []Member
	// ClusterID is meta.properties' cluster.id; in a dynamic quorum the
	// join RPC refuses nodes formatted with another one.
	ClusterID string
	// TLS secures the quorum port (the controller listener is SSL or
	// SASL_SSL); nil: plaintext.
	TLS *QuorumTLS
	// TransferTimeout bounds the leadership transfer a leader attempts
	// before it closes; <= 0 means 5s.
	TransferTimeout time.Duration
	// Logger receives raft and quorum events; nil discards them.
	Logger *slog.Logger
	// RaftLogLevel is the lowest hashicorp/raft level passed on to Logger;
	// NoLevel means Info.
	RaftLogLevel hclog.Level

	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	// SnapshotThreshold is how many raft entries past the last snapshot
	// trigger a new one (checked every SnapshotInterval); TrailingLogs is how
	// many entries are kept after a snapshot so slow followers can catch up
	// without installing it.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
	// SnapshotRetain is how many snapshots to keep; <= 0 means 2.
	SnapshotRetain int
}

// RaftLog is the metadata Log of a cluster: a hashicorp/raft quorum of the
// controller nodes (voters, like KRaft's controller.quorum.voters) plus
// broker-only non-voters (KRaft observers). Every node applies each committed
// entry (one Commit = one raft entry = one EncodeBatch payload) through
// raftFSM, so Image and Subscribe behave as with LocalLog on every node;
// Commit succeeds only on the leader (the active controller) and fails with
// NOT_CONTROLLER elsewhere.
//
// On disk (RaftConfig.Dir): raft.db (raftStore: raft log + stable state) and
// snapshots/ (raft FileSnapshotStore; each snapshot is the image's records,
// see raftFSM). Raft snapshots after SnapshotThreshold entries and truncates
// its log to TrailingLogs.
//
// Thread-safety: all methods are safe for concurrent use. Commits are
// serialized by commitSem (validate against the image, append, wait for the
// local apply), like the LocalLog mutex; Image never blocks.
type RaftLog struct {
	cfg           RaftConfig
	logger        *slog.Logger
	advertiseAddr string

	localKey ReplicaKey

	pub       *metadata.Publisher
	store     *raftStore
	stream    *raftStreamLayer
	transport *trackingTransport
	raft      *raft.Raft
	observer  *raft.Observer

	// commitSem (capacity 1) is held from validating a batch until raft has
	// applied it, so the next Commit validates against an image that
	// includes it. A channel rather than a mutex so waiting honours ctx.
	commitSem chan struct{}
	// readyTerm is the term in which this leader's FSM was last brought up
	// to date with a barrier: a new leader may not yet have applied entries
	// committed by its predecessor, and must not validate against a stale
	// image.
	readyTerm atomic.Uint64

	closing   chan struct{}
	closeOnce sync.Once
	closeErr  error
	ready     chan struct{} // closed once raft is set; join requests wait for it
	joinDone  chan struct{} // closed when joinLoop exits (at once on voters)
	obsDone   chan struct{} // closed when watchLeadership exits
}

var _ metadata.Log = (*RaftLog)(nil)

func (c *RaftConfig) setDefaults() error {
	if c.NodeID < 0 {
		return fmt.Errorf("metadata: raft node id %d must not be negative", c.NodeID)
	}
	if c.Dir == "" {
		return errors.New("metadata: raft dir is required")
	}
	if len(c.Voters) == 0 && len(c.BootstrapServers) == 0 {
		return errors.New("metadata: controller.quorum.voters and controller.quorum.bootstrap.servers are empty")
	}
	if len(c.Voters) > 0 && len(c.InitialVoters) > 0 {
		return errors.New("metadata: initial voters (storage format) and controller.quorum.voters are exclusive")
	}
	for _, v := range c.InitialVoters {
		if _, _, err := net.SplitHostPort(v.Addr); err != nil || v.Key.ID < 0 {
			return fmt.Errorf("metadata: invalid initial voter %s@%s", v.Key, v.Addr)
		}
	}
	for id, addr := range c.Voters {
		if _, _, err := net.SplitHostPort(addr); err != nil || id < 0 {
			return fmt.Errorf("metadata: invalid quorum voter %d@%s", id, addr)
		}
	}
	if _, ok := c.Voters[c.NodeID]; c.Voter && !ok && !c.dynamic() {
		return fmt.Errorf("metadata: node %d is a controller but not in controller.quorum.voters", c.NodeID)
	}
	if c.Listener == nil && c.BindAddr == "" {
		return errors.New("metadata: raft bind address is required")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.SnapshotRetain <= 0 {
		c.SnapshotRetain = 2
	}
	if c.TransferTimeout <= 0 {
		c.TransferTimeout = 5 * time.Second
	}
	return nil
}

// dynamic reports whether the quorum is dynamic (KIP-853): its voters are
// raft's configuration, not controller.quorum.voters.
func (c *RaftConfig) dynamic() bool { return len(c.Voters) == 0 }

// localKey is this node's replica key: with its directory id in a dynamic
// quorum.
func (c *RaftConfig) localKey() ReplicaKey {
	if c.dynamic() {
		return ReplicaKey{ID: c.NodeID, DirectoryID: c.DirectoryID}
	}
	return ReplicaKey{ID: c.NodeID}
}

func (c *RaftConfig) raftConfig(logger hclog.Logger) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = c.localKey().serverID()
	// A voter removed from the quorum (RemoveRaftVoter demotes it) keeps
	// running as an observer, as KIP-853's removed voters keep fetching;
	// raft's default would shut a demoted leader's raft down.
	rc.ShutdownOnRemove = false
	rc.Logger = logger
	setIfPositive(&rc.HeartbeatTimeout, c.HeartbeatTimeout)
	setIfPositive(&rc.ElectionTimeout, c.ElectionTimeout)
	setIfPositive(&rc.LeaderLeaseTimeout, c.LeaderLeaseTimeout)
	setIfPositive(&rc.CommitTimeout, c.CommitTimeout)
	setIfPositive(&rc.SnapshotInterval, c.SnapshotInterval)
	setIfPositive(&rc.SnapshotThreshold, c.SnapshotThreshold)
	setIfPositive(&rc.TrailingLogs, c.TrailingLogs)
	// Metadata commits are rare; the default batching limits are fine.
	return rc
}

func setIfPositive[T int64 | uint64 | time.Duration](dst *T, v T) {
	if v > 0 {
		*dst = v
	}
}

// parseServerID returns the node id of a raft server id.
func parseServerID(id raft.ServerID) (int32, bool) {
	k, ok := parseReplicaKey(id)
	return k.ID, ok
}

// OpenRaftLog opens (creating if needed) the raft store under cfg.Dir,
// restores the latest snapshot, starts raft and, on the first start of a
// voter, bootstraps the quorum with cfg.Voters. Every voter bootstraps with
// the same configuration; hashicorp/raft documents this as safe (identical
// configurations at index 1 on every node), and a node that already has
// state skips it. A non-voter starts empty and asks the leader to add it.
func OpenRaftLog(cfg RaftConfig) (*RaftLog, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	l := &RaftLog{
		cfg:       cfg,
		logger:    cfg.Logger.With("node", cfg.NodeID),
		commitSem: make(chan struct{}, 1),
		closing:   make(chan struct{}),
		ready:     make(chan struct{}),
		joinDone:  make(chan struct{}),
		obsDone:   make(chan struct{}),
		localKey:  cfg.localKey(),
	}
	hlog := newRaftLogger(l.logger, cfg.RaftLogLevel)

	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.BindAddr); err != nil {
			return nil, fmt.Errorf("metadata: raft listener: %w", err)
		}
	}
	cleanup := []func(){func() { ln.Close() }}
	fail := func(err error) (*RaftLog, error) {
		for _, f := range slices.Backward(cleanup) {
			f()
		}
		return nil, err
	}
	l.advertiseAddr = cfg.AdvertiseAddr
	if l.advertiseAddr == "" && cfg.Voter {
		l.advertiseAddr = cfg.Voters[cfg.NodeID]
	}
	if l.advertiseAddr == "" {
		l.advertiseAddr = ln.Addr().String()
	}

	store, err := openRaftStore(filepath.Join(cfg.Dir, RaftStoreFile))
	if err != nil {
		return fail(err)
	}
	l.store = store
	cleanup = append(cleanup, func() { store.Close() })
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, cfg.SnapshotRetain, hlog)
	if err != nil {
		return fail(err)
	}

	stream := newRaftStreamLayer(ln, l.logger, l.advertiseAddr, l.serveJoin, cfg.TLS)
	l.stream = stream
	l.transport = newTrackingTransport(raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  stream,
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  hlog,
	}))
	cleanup = append(cleanup, func() { l.transport.Close() })
	// Raft starts replicating inside NewRaft, before l.raft is set.
	var started atomic.Pointer[raft.Raft]
	l.transport.leaderLastIndex = func() uint64 {
		if r := started.Load(); r != nil {
			return r.LastIndex()
		}
		return 0
	}

	l.pub = metadata.NewPublisher(metadata.EmptyImage())
	cleanup = append(cleanup, l.pub.Close)
	rc := cfg.raftConfig(hlog)

	if (cfg.Voter && !cfg.dynamic()) || len(cfg.InitialVoters) > 0 {
		if err := l.bootstrapIfEmpty(rc, snaps); err != nil {
			return fail(err)
		}
	}
	r, err := raft.NewRaft(rc, &raftFSM{pub: l.pub, logger: l.logger}, store, store, snaps, l.transport)
	if err != nil {
		return fail(fmt.Errorf("metadata: starting raft: %w", err))
	}
	l.raft = r
	started.Store(r)
	close(l.ready)

	obsCh := make(chan raft.Observation, 16)
	l.observer = raft.NewObserver(obsCh, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	r.RegisterObserver(l.observer)
	go l.watchLeadership(obsCh)
	if l.needsJoin() {
		go l.joinLoop()
	} else {
		close(l.joinDone)
	}
	img := l.pub.Image()
	l.logger.Info("metadata raft log opened", "dir", cfg.Dir, "voter", cfg.Voter, "addr", l.advertiseAddr,
		"offset", img.Offset(), "last_index", r.LastIndex())
	return l, nil
}

// bootstrapIfEmpty writes the initial configuration (all voters) into an
// empty store.
func (l *RaftLog) bootstrapIfEmpty(rc *raft.Config, snaps raft.SnapshotStore) error {
	has, err := raft.HasExistingState(l.store, l.store, snaps)
	if err != nil {
		return fmt.Errorf("metadata: checking raft state: %w", err)
	}
	if has {
		return nil
	}
	var conf raft.Configuration
	for _, id := range slices.Sorted(maps.Keys(l.cfg.Voters)) {
		conf.Servers = append(conf.Servers, raft.Server{
			Suffrage: raft.Voter, ID: ReplicaKey{ID: id}.serverID(), Address: raft.ServerAddress(l.cfg.Voters[id]),
		})
	}
	for _, v := range l.cfg.InitialVoters {
		conf.Servers = append(conf.Servers, raft.Server{
			Suffrage: raft.Voter, ID: v.Key.serverID(), Address: raft.ServerAddress(v.Addr),
		})
	}
	err = raft.BootstrapCluster(rc, l.store, l.store, snaps, l.transport, conf)
	if err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("metadata: bootstrapping raft quorum: %w", err)
	}
	l.logger.Info("bootstrapped metadata quorum", "voters", len(conf.Servers))
	return nil
}

// watchLeadership logs leader changes and resets replica tracking when this
// node becomes leader.
func (l *RaftLog) watchLeadership(ch chan raft.Observation) {
	defer close(l.obsDone)
	for {
		select {
		case <-l.closing:
			return
		case o := <-ch:
			lo := o.Data.(raft.LeaderObservation)
			if lo.LeaderID == l.localKey.serverID() {
				l.transport.resetProgress()
			}
			l.logger.Info("metadata quorum leader changed", "leader", string(lo.LeaderID), "term", l.raft.CurrentTerm())
		}
	}
}

// ControllerListener returns the listener of the Kafka-protocol connections
// that brokers open to this node's controller on the quorum port (see
// ControllerRPCByte). A controller serves the controller APIs on it; it ends
// when the log closes. Its Addr is the address the quorum port is bound to.
func (l *RaftLog) ControllerListener() net.Listener { return l.stream.controller }

// Image implements Log.
func (l *RaftLog) Image() *metadata.Image { return l.pub.Image() }

// Subscribe implements Log. Subscribers see every applied batch and every
// snapshot restore, in order.
func (l *RaftLog) Subscribe(fn func(old, new *metadata.Image)) { l.pub.Subscribe(fn) }

// IsLeader reports whether this node is the raft leader (the active
// controller).
func (l *RaftLog) IsLeader() bool { return l.raft.State() == raft.Leader }

// LeaderID returns the current leader's node id, if one is known.
func (l *RaftLog) LeaderID() (int32, bool) {
	_, id := l.raft.LeaderWithID()
	if id == "" {
		return -1, false
	}
	return parseServerID(id)
}

// LeaderEpoch returns the current raft term (KRaft's leader epoch).
func (l *RaftLog) LeaderEpoch() uint64 { return l.raft.CurrentTerm() }

// LeaderCh delivers true when this node becomes leader and false when it
// stops being leader, so a controller can start or stop its timers. It is
// raft's own channel: there is one, for one consumer, and when the consumer
// lags only the latest transition is kept.
func (l *RaftLog) LeaderCh() <-chan bool { return l.raft.LeaderCh() }

// LeaderAddr returns the leader's raft address (its controller endpoint),
// "" when no leader is known.
func (l *RaftLog) LeaderAddr() string { return l.leaderAddr() }

// needsJoin reports whether this node must ask the leader to add it: a
// static quorum's non-voters, and in a dynamic quorum every node that is not
// a voter of the raft configuration it holds (brokers, controllers
// formatted with --no-initial-controllers, removed voters). The join is a
// no-op on the leader for a node that is already a member.
func (l *RaftLog) needsJoin() bool {
	if !l.cfg.dynamic() {
		return !l.cfg.Voter
	}
	ms, err := l.Members(context.Background())
	if err != nil {
		return true
	}
	// A voter whose address changed joins too: the leader then updates
	// its address (raft_join.go).
	m, ok := member(ms, l.localKey)
	return !ok || !m.Voter || m.Addr != l.advertiseAddr
}

// TransferLeadership hands leadership to another voter when this node
// leads and another voter exists, and waits up to timeout for it; it
// reports whether leadership moved. Raft picks the most up-to-date voter.
func (l *RaftLog) TransferLeadership(timeout time.Duration) bool {
	if !l.IsLeader() {
		return false
	}
	ms, err := l.Members(context.Background())
	if err != nil {
		return false
	}
	others := 0
	for _, m := range ms {
		if m.Voter && m.Key != l.localKey {
			others++
		}
	}
	if others == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := waitRaft(ctx, l.raft.LeadershipTransfer()); err != nil {
		l.logger.Warn("metadata quorum leadership transfer failed", "err", err)
		return false
	}
	l.logger.Info("metadata quorum leadership transferred before stopping")
	return true
}

// leaderAddr returns the leader's raft address, from controller.quorum.voters
// when the leader is a known voter.
func (l *RaftLog) leaderAddr() string {
	addr, id := l.raft.LeaderWithID()
	if n, ok := parseServerID(id); ok {
		if a, ok := l.cfg.Voters[n]; ok {
			return a
		}
	}
	return string(addr)
}

// notController is the error of a write on a node that is not the leader.
func (l *RaftLog) notController() error {
	if id, ok := l.LeaderID(); ok {
		return fmt.Errorf("%w: node %d is not the active controller; the leader is %d", kerr.NotController, l.cfg.NodeID, id)
	}
	return fmt.Errorf("%w: node %d is not the active controller; no leader is elected", kerr.NotController, l.cfg.NodeID)
}

// raftError converts a raft future's error into a Kafka one.
func (l *RaftLog) raftError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return l.notController()
	case errors.Is(err, raft.ErrLeadershipLost):
		// The entry may or may not commit; KRaft answers NOT_CONTROLLER
		// when the controller resigns mid-operation, and clients retry.
		return fmt.Errorf("%w: leadership lost while committing: outcome unknown", kerr.NotController)
	case errors.Is(err, raft.ErrRaftShutdown):
		return metadata.ErrLogClosed
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: metadata quorum busy: %v", kerr.RequestTimedOut, err)
	}
	return err
}

// timeoutOf returns ctx's remaining time for raft calls (0 = no limit).
func timeoutOf(ctx context.Context) time.Duration {
	d, ok := ctx.Deadline()
	if !ok {
		return 0
	}
	return max(time.Until(d), time.Millisecond)
}

// waitRaft waits for f or ctx, whichever is first. raft's timeouts bound only
// enqueueing, so without this a commit could wait for a quorum forever.
func waitRaft(ctx context.Context, f raft.Future) error {
	if ctx.Done() == nil {
		return f.Error()
	}
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: metadata commit: %w", kerr.RequestTimedOut, ctx.Err())
	}
}

// Commit implements Log. It appends recs as one raft entry on the leader and
// returns once this node's FSM has applied it. On any other node it fails
// with an error wrapping kerr.NotController. If ctx ends first the error
// wraps kerr.RequestTimedOut and the batch may still commit later.
func (l *RaftLog) Commit(ctx context.Context, recs []metadata.Record) (*metadata.Image, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: empty metadata batch", kerr.InvalidRequest)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case <-l.closing:
		return nil, metadata.ErrLogClosed
	default:
	}
	if !l.IsLeader() {
		return nil, l.notController()
	}
	select {
	case l.commitSem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: waiting to commit: %w", kerr.RequestTimedOut, ctx.Err())
	}
	released := false
	defer func() {
		if !released {
			<-l.commitSem
		}
	}()
	if term := l.raft.CurrentTerm(); l.readyTerm.Load() != term {
		if err := waitRaft(ctx, l.raft.Barrier(timeoutOf(ctx))); err != nil {
			return nil, l.raftError(err)
		}
		l.readyTerm.Store(term)
	}
	cur := l.pub.Image()
	offset := cur.Offset() + int64(len(recs))
	if _, err := cur.Apply(offset, recs); err != nil {
		return nil, err
	}
	payload, err := metadata.EncodeBatch(offset, recs)
	if err != nil {
		return nil, err
	}
	af := l.raft.Apply(payload, timeoutOf(ctx))
	type outcome struct {
		res raftApplyResult
		err error
	}
	done := make(chan outcome, 1)
	released = true
	go func() {
		// The semaphore is released only once raft has decided, even if
		// the caller has given up, so the next Commit sees this batch.
		defer func() { <-l.commitSem }()
		var o outcome
		if o.err = af.Error(); o.err == nil {
			o.res, _ = af.Response().(raftApplyResult)
		}
		done <- o
	}()
	select {
	case o := <-done:
		if o.err != nil {
			return nil, l.raftError(o.err)
		}
		if o.res.err != nil {
			return nil, o.res.err
		}
		return o.res.img, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: metadata commit: %w", kerr.RequestTimedOut, ctx.Err())
	}
}

// Snapshot asks raft to snapshot now (normally it does so on its own after
// SnapshotThreshold entries) and truncates the log to TrailingLogs.
func (l *RaftLog) Snapshot() error {
	err := l.raft.Snapshot().Error()
	if errors.Is(err, raft.ErrNothingNewToSnapshot) {
		return nil
	}
	return l.raftError(err)
}

// Close implements Log: it shuts raft down (this node stops voting and
// applying), closes the store and delivers queued notifications. A leader
// first hands leadership to another voter (TransferLeadership), so the
// quorum does not wait an election timeout for a new active controller, as
// a KRaft leader resigns on shutdown.
func (l *RaftLog) Close() error {
	l.closeOnce.Do(func() {
		l.TransferLeadership(l.cfg.TransferTimeout)
		close(l.closing)
		<-l.joinDone
		l.raft.DeregisterObserver(l.observer)
		<-l.obsDone
		if err := l.raft.Shutdown().Error(); err != nil {
			l.closeErr = err
		}
		// raft's shutdown closes the transport (and the listener with it).
		if err := l.store.Close(); err != nil && l.closeErr == nil {
			l.closeErr = err
		}
		l.pub.Close()
	})
	return l.closeErr
}
