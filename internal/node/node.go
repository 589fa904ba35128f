// Package node assembles a Vltava node from its parts: configuration, the
// metadata quorum and controller, the storage manager, the partitions, the
// Kafka API handlers and the listeners. It owns start-up and shutdown order.
//
// Every node, a single one included, runs the same code: a Raft metadata
// quorum (static controller.quorum.voters, dynamic through
// controller.quorum.bootstrap.servers, or one voter of itself when neither
// is set; see quorum_mode.go), the
// controller duties when it leads that quorum, and the broker lifecycle
// (registration, heartbeats, controlled shutdown) against whichever node is
// the active controller.
//
// process.roles picks the parts: a controller (a raft voter) runs the
// controller duties and serves the controller APIs on its quorum port
// (its controller listener, behind quorum.ControllerRPCByte),
// where brokers reach it; a broker runs the partitions, the group
// coordinator, the client listeners and the lifecycle. A dedicated
// controller (process.roles=controller) is not a broker: it never
// registers, holds no partitions and serves no clients, as in KRaft.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vltava/vltava/internal/broker"
	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/connect/runner"
	"github.com/vltava/vltava/internal/console"
	"github.com/vltava/vltava/internal/controller"
	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metadata/quorum"
	"github.com/vltava/vltava/internal/metrics"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/registry"
	"github.com/vltava/vltava/internal/replication"
	"github.com/vltava/vltava/internal/restproxy"
	"github.com/vltava/vltava/internal/server"
	"github.com/vltava/vltava/internal/storage"
	"github.com/vltava/vltava/internal/telemetry"
	"github.com/vltava/vltava/internal/txn"
)

// Node is a running broker, controller, or both (process.roles). The
// broker parts (lifecycle, store, partitions, replicas, groups, server) are
// nil on a controller-only node; active is nil on a broker-only node.
type Node struct {
	cfg        *config.Broker
	log        *slog.Logger
	meta       *quorum.RaftLog
	quorumMode quorumMode
	controller *rules.Controller
	active     *controller.Active // nil on broker-only nodes
	channel    *controller.Client
	lifecycle  *controller.Lifecycle
	store      *storage.Manager
	partitions *partition.Manager
	replicas   *replication.Manager
	groups     *group.Coordinator
	txns       *txn.Coordinator
	txnNet     *txn.NetTransport
	tiered     *tieredNode // nil without remote.log.storage.system.enable
	server     *server.Server
	brokerAPIs *broker.Broker
	// quorumServer serves the controller APIs on the quorum port of a
	// controller; nil on a broker-only node.
	quorumServer *server.Server
	// clusterIDMu guards clusterID, which changes once when a new node
	// adopts the cluster's id (adoptClusterID).
	clusterIDMu sync.Mutex
	clusterID   string
	// connQuotasMu guards connQuotas, the connection quotas last given to
	// the server (applyConnectionQuotas, from the metadata subscriber).
	connQuotasMu sync.Mutex
	connQuotas   config.ConnectionQuotas
	ready        chan struct{}
	// handler answers the Kafka APIs of the client listeners.
	handler server.Handler
	// dirs tracks failed log dirs (dir_failure.go).
	dirs dirFailures
	// listenerSec is each listener's TLS and SASL (listener_security.go).
	listenerSec map[string]listenerSecurity
	// obs is the admin listener and its metrics (observability.go); nil
	// without admin.listeners.
	obs *observability
	// rest is the embedded REST Proxy (rest.go); nil without rest.listeners.
	rest *restproxy.Proxy
	// connect is the embedded Connect worker (connect.go); nil without
	// connect.enable.
	connect *runner.Runner
	// telemetry receives client metrics (KIP-714); nil unless
	// telemetry.enable.
	telemetry *telemetry.Receiver
	// registry is the embedded schema registry (schema_registry.go); nil
	// without schema.registry.listeners.
	registry *registry.Server
	// console is the web console (console.go); nil without
	// console.listeners.
	console *console.Console
}

// singleVoterAddr is the quorum address of a node without
// controller.quorum.voters: it is its own only voter, nobody dials it, and
// the address recorded in its raft configuration must not change between
// runs, so it is a fixed placeholder while raft binds an ephemeral port.
const singleVoterAddr = "127.0.0.1:0"

// Start opens the node's state, joins (or forms) the metadata quorum, binds
// its listeners and returns once the controller has unfenced it.
func Start(cfg *config.Broker, log *slog.Logger) (_ *Node, err error) {
	if log == nil {
		log = slog.Default()
	}
	// The group coordinator's settings are checked against each other
	// before anything is opened.
	groupCfg, err := group.ConfigFromBroker(cfg)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: log, ready: make(chan struct{})}
	metrics.SetEnabled(cfg.MetricsEnable) // before anything counts
	if n.listenerSec, err = buildListenerSecurity(cfg, scramStore{n}); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			n.closeAll(false)
		}
	}()
	for _, d := range cfg.LogDirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("log dir %s: %w", d, err)
		}
	}
	mode, err := modeOf(cfg)
	if err != nil {
		return nil, err
	}
	n.quorumMode = mode
	var mp metadata.MetaProperties
	var initialVoters []quorum.Member
	if mode == dynamicQuorum {
		mp, initialVoters, err = dynamicStorage(cfg)
	} else {
		mp, err = metadata.LoadOrCreateMetaProperties(cfg.LogDirs, cfg.NodeID)
	}
	if err != nil {
		return nil, err
	}
	n.clusterID = mp.ClusterID
	if n.dirs.ids, err = metadata.EnsureDirectoryIDs(cfg.LogDirs); err != nil {
		return nil, err
	}

	if n.meta, err = openQuorum(cfg, mode, mp, initialVoters, log.With("component", "metadata")); err != nil {
		return nil, fmt.Errorf("opening metadata quorum: %w", err)
	}
	n.controller = rules.NewController(n.meta, rules.ControllerConfig{
		NodeID:                   cfg.NodeID,
		DefaultNumPartitions:     cfg.NumPartitions,
		DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		ValidateTopicConfigs:     config.TopicValidator(cfg),
		ValidateTopicChange:      config.ValidateTopicChange,
		ValidateGroupConfigs:     func(c map[string]string) error { return config.ValidateGroupConfigs(cfg, c) },
		UncleanLeaderElection:    cfg.UncleanLeaderElectionEnable,
		DeleteTopicDisabled:      !cfg.DeleteTopicEnable,
		BootstrapRecords:         func() ([]metadata.Record, error) { return metadata.ReadBootstrapRecords(raftDir(cfg)) },
		Logger:                   log.With("component", "controller"),
	})
	if isController(cfg) {
		var rebalance time.Duration
		if cfg.AutoLeaderRebalanceEnable {
			rebalance = time.Duration(cfg.LeaderImbalanceCheckIntervalSeconds) * time.Second
		}
		n.active = controller.NewActive(controller.ActiveOptions{
			NodeID: cfg.NodeID, Quorum: n.meta, Controller: n.controller,
			SessionTimeout:    time.Duration(cfg.BrokerSessionTimeoutMs) * time.Millisecond,
			RebalanceInterval: rebalance,
			ImbalancePct:      cfg.LeaderImbalancePerBrokerPercentage,
			ClusterID:         n.clusterID,
			Logger:            log.With("component", "controller"),
		})
	}
	voters := quorumVoters(cfg)
	var bootstrap []string
	var leaderAddr func() string
	switch mode {
	case zeroConfigQuorum:
		// A single node's raft address is a placeholder; its controller
		// endpoint is wherever the quorum port was bound.
		voters[cfg.NodeID] = n.meta.ControllerListener().Addr().String()
	case dynamicQuorum:
		// The voters are raft's configuration: the leader's raft address
		// is its controller endpoint; the bootstrap servers are where to
		// look when no leader is known.
		voters, bootstrap, leaderAddr = nil, bootstrapServers(cfg), n.meta.LeaderAddr
	}
	ctrlSec, err := controllerSecurity(cfg) // interbroker_security.go
	if err != nil {
		return nil, err
	}
	n.channel = controller.NewClient(controller.ClientOptions{
		NodeID: cfg.NodeID, Quorum: n.meta, Active: n.active, Controller: n.controller,
		Voters: voters, BootstrapServers: bootstrap, LeaderAddr: leaderAddr,
		Security: ctrlSec,
		Logger:   log.With("component", "controller-channel"),
	})
	if !isBroker(cfg) {
		if err := n.startControllerOnly(); err != nil {
			return nil, err
		}
		return n, nil
	}

	n.store, err = storage.OpenManager(storage.ManagerConfig{
		Dirs:                   cfg.LogDirs,
		RetentionCheckInterval: msDuration(int64(cfg.LogRetentionCheckIntervalMs)),
		// Idle producers (producer.id.expiration.ms) are dropped on
		// their own schedule, as Kafka's producer expiration check.
		ProducerExpirationCheckInterval: msDuration(int64(cfg.ProducerIDExpirationCheckIntervalMs)),
		// Kafka's default scheduler interval is "never"; storage then
		// checks flush.ms every second, so a topic that sets flush.ms
		// gets it without also tuning the scheduler.
		FlushCheckInterval: msDuration(int64(cfg.LogFlushSchedulerIntervalMs)),
		CheckpointInterval: msDuration(int64(cfg.LogFlushOffsetCheckpointIntervalMs)),
		// Log compaction (log.cleaner.*).
		// log.cleaner.threads=0 runs no cleaner thread in Kafka either.
		CleanerDisabled:          !cfg.LogCleanerEnable || cfg.LogCleanerThreads == 0,
		CleanerBackoff:           msDuration(cfg.LogCleanerBackoffMs),
		CleanerDedupeBufferBytes: cfg.LogCleanerDedupeBufferSize,
		// Replica moves between log dirs (AlterReplicaLogDirs).
		MoveThreads:                int(cfg.NumReplicaAlterLogDirsThreads),
		MoveBytesPerSecond:         cfg.ReplicaAlterLogDirsIOMaxBytesPerSecond,
		FS:                         n.storageFS(),
		CleanerThreads:             int(cfg.LogCleanerThreads),
		CleanerIOMaxBytesPerSecond: cfg.LogCleanerIOMaxBytesPerSecond,
		CleanerLoadFactor:          cfg.LogCleanerIOBufferLoadFactor,
		Logger:                     log.With("component", "storage"),
	})
	if err != nil {
		return nil, fmt.Errorf("opening log dirs: %w", err)
	}

	n.partitions = partition.NewManager(cfg.NodeID, cfg, n.store, log.With("component", "partitions"))
	n.partitions.SetControllerClient(n.channel)
	n.store.SetDirFailureHandler(n.handleDirFailure)
	// Follower fetchers replicate from the leaders of the partitions this
	// node follows, in step with the image.
	// Replication throttles: the leader side is applied by the fetch
	// handler, the follower side by the fetchers; the limits follow the
	// dynamic broker configs of each image.
	quotas := replication.NewQuotas()
	ibSec, err := interBrokerSecurity(cfg) // interbroker_security.go
	if err != nil {
		return nil, err
	}
	n.replicas = replication.NewManager(replication.Options{
		NodeID: cfg.NodeID, Config: cfg, Partitions: n.partitions, Quotas: quotas,
		Security: ibSec,
		Logger:   log.With("component", "replication"),
	})
	n.groups = group.NewCoordinator(group.Options{
		Config: groupCfg,
		Log: group.PartitionLog{NodeID: cfg.NodeID, Partitions: n.partitions,
			CommitTimeout: msDuration(int64(cfg.OffsetsCommitTimeoutMs))},
		Logger: log.With("component", "groups"),
	})
	var b *broker.Broker // the transaction coordinator takes producer ids from it
	n.txns, n.txnNet = n.newTxnCoordinator(cfg, log, ibSec, func(ctx context.Context) (int64, error) { return b.NextProducerID(ctx) })
	if n.tiered, err = newTieredNode(cfg, log.With("component", "tiered")); err != nil { // tiered.go; before the subscription, which sets its quota rates
		return nil, err
	}
	n.tiered.applyQuotas(cfg, n.meta.Image())
	// Every committed metadata change reaches the partitions in order,
	// then the group coordinator, which loads the __consumer_offsets
	// partitions that became led here.
	// applied is what the broker lifecycle reports to the controller:
	// the offset whose partitions are open here, advanced (and reported
	// at once) as each image is applied.
	applied := controller.NewAppliedOffset()
	n.meta.Subscribe(func(_, img *metadata.Image) {
		n.adoptClusterID(img)
		if err := n.partitions.Apply(img); err != nil {
			log.Error("applying metadata to partitions", "err", err)
		}
		applied.Advance(img.Offset())
		n.replicas.Apply(img)
		n.groups.ApplyImage(img)
		n.txns.ApplyImage(img)
		n.applyConnectionQuotas(img)
		n.applyListenerTLS(img)
		n.tiered.applyQuotas(cfg, img)
	})
	initial := n.meta.Image()
	if err := n.partitions.Apply(initial); err != nil {
		return nil, fmt.Errorf("opening partitions: %w", err)
	}
	applied.Advance(initial.Offset())
	n.replicas.Apply(n.meta.Image())
	n.store.Start()
	n.groups.ApplyImage(n.meta.Image())
	n.txns.ApplyImage(n.meta.Image())

	var remote broker.RemoteTier
	if n.tiered != nil {
		remote = n.tiered
	}
	b = broker.New(broker.Options{
		Config:       cfg,
		ClusterID:    n.clusterID,
		Meta:         n.meta,
		Controller:   n.controller,
		Partitions:   n.partitions,
		Groups:       n.groups,
		Txns:         n.txns,
		Channel:      n.channel,
		Active:       n.active,
		Quorum:       n.meta,
		KRaftVersion: kraftVersion(n.quorumMode),
		Ready:        n.ready,
		LeaderQuota:  quotas.Leader,
		Logger:       log.With("component", "broker"),
		Loggers:      loggerLevels(log),
		Telemetry:    n.telemetryReceiver(),

		// The KIP-890 verification connects to coordinators as the
		// replica fetchers do to leaders.
		InterBrokerSecurity: ibSec,
		Remote:              remote,
		CheckListenerTLS:    n.checkListenerTLS,
	})
	n.handler = b
	n.brokerAPIs = b
	var lcs []server.ListenerConfig
	for _, l := range cfg.Listeners {
		if slices.Contains(cfg.ControllerListenerNames, l.Name) {
			continue // the metadata quorum's (raft) listener
		}
		lcs = append(lcs, n.secure(server.ListenerConfig{
			Name:             l.Name,
			SecurityProtocol: l.SecurityProtocol,
			Addr:             net.JoinHostPort(l.Host, strconv.Itoa(l.Port)),
		}))
	}
	img := n.meta.Image()
	quotas0 := cfg.ConnectionQuotas(img.BrokerConfig(strconv.Itoa(int(cfg.NodeID))), img.BrokerConfig(""))
	limits, err := connectionLimits(cfg, quotas0)
	if err != nil {
		return nil, err
	}
	srv := server.New(server.Config{
		Listeners:      lcs,
		MaxRequestSize: cfg.SocketRequestMaxBytes,
		IdleTimeout:    time.Duration(cfg.ConnectionsMaxIdleMs) * time.Millisecond,
		Limits:         limits,
		SendBuffer:     int(cfg.SocketSendBufferBytes),
		ReceiveBuffer:  int(cfg.SocketReceiveBufferBytes),
		ConnectionRate: ipConnectionRate(cfg, n.meta),

		RequestLogSampleRate: cfg.LogRequestSampleRate,
	}, b, log.With("component", "server"))
	n.connQuotasMu.Lock()
	n.server, n.connQuotas = srv, quotas0
	n.connQuotasMu.Unlock()
	// Dynamic connection quotas from here on (and any committed since).
	n.applyConnectionQuotas(n.meta.Image())
	if err := n.server.Start(); err != nil {
		return nil, err
	}
	for name, addr := range n.server.Addrs() {
		log.Info("listening", "listener", name, "addr", addr.String())
	}
	if err := n.startObservability(); err != nil {
		return nil, err
	}
	if isController(cfg) {
		// Before registering: the other brokers (and this one) register
		// through the active controller's quorum port.
		if err := n.serveControllerAPIs(b); err != nil {
			return nil, err
		}
	}

	// Register with the active controller and wait to be unfenced before
	// serving clients (the listeners are bound so the registration can
	// carry their real ports, and so this node, if it is the controller,
	// can answer the other brokers).
	n.lifecycle = controller.StartLifecycle(controller.LifecycleOptions{
		Registration: rules.Registration{
			BrokerID: cfg.NodeID, IncarnationID: metadata.NewUuid(),
			Endpoints: n.endpoints(), Rack: cfg.BrokerRack,
		},
		Client:            n.channel,
		MetadataOffset:    applied.Load,
		MetadataApplied:   applied.Advanced(),
		HeartbeatInterval: time.Duration(cfg.BrokerHeartbeatIntervalMs) * time.Millisecond,
		Logger:            log.With("component", "broker-lifecycle"),
		OfflineDirs:       n.offlineDirs,
	})
	n.setLifecyclePoke(n.lifecycle.Poke)
	timeout := time.Duration(cfg.InitialBrokerRegistrationTimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := n.lifecycle.WaitUnfenced(ctx); err != nil {
		return nil, fmt.Errorf("broker %d was not registered and unfenced by the controller within initial.broker.registration.timeout.ms (%v): %w", cfg.NodeID, timeout, err)
	}
	if err := n.partitions.WaitApplied(ctx, n.meta.Image().Offset()); err != nil {
		return nil, fmt.Errorf("applying metadata: %w", err)
	}
	if err := n.partitions.RemoveStray(); err != nil {
		log.Warn("removing stray logs", "err", err)
	}
	if err := n.listenSchemaRegistry(); err != nil {
		return nil, err
	}
	if err := n.startRest(); err != nil {
		return nil, err
	}
	close(n.ready)
	// After ready: the worker is a client of this node, whose requests
	// wait for it.
	if err := n.startConnect(); err != nil {
		return nil, err
	}
	if n.tiered != nil {
		n.tiered.start(cfg, b, n.partitions, n.meta.Image, n.ownListener(), ibSec)
	}
	if err := n.openSchemaRegistry(); err != nil {
		return nil, err
	}
	if err := n.startConsole(); err != nil {
		return nil, err
	}
	log.Info("vltava node started", "node.id", cfg.NodeID, "cluster.id", n.ClusterID(),
		"topics", len(n.meta.Image().Topics()), "partitions", len(n.partitions.All()))
	return n, nil
}

// adoptClusterID records the cluster's id, committed by the first active
// controller, in this node's meta.properties when it differs from the id
// the node generated on its first start (every node generates one; the
// cluster keeps the first controller's).
func (n *Node) adoptClusterID(img *metadata.Image) {
	id := img.ClusterID()
	if id == "" || id == n.ClusterID() {
		return
	}
	for _, d := range n.cfg.LogDirs {
		path := filepath.Join(d, metadata.MetaPropertiesFile)
		mp := metadata.MetaProperties{ClusterID: id, NodeID: n.cfg.NodeID}
		if old, err := metadata.ReadMetaProperties(path); err == nil {
			mp.DirectoryID = old.DirectoryID
		}
		if err := metadata.WriteMetaProperties(path, mp); err != nil {
			n.log.Error("recording the cluster id", "path", path, "err", err)
			return
		}
	}
	n.log.Info("joined cluster", "cluster.id", id, "generated", n.ClusterID())
	n.clusterIDMu.Lock()
	n.clusterID = id
	n.clusterIDMu.Unlock()
}

// startControllerOnly finishes starting a dedicated controller
// (process.roles=controller): it serves the controller APIs on the quorum
// port and nothing else. It has no log dirs to open (its log.dirs hold only
// meta.properties and the metadata quorum), does not register as a broker,
// and is ready at once; its Active takes up the controller duties whenever
// it leads the quorum.
func (n *Node) startControllerOnly() error {
	n.meta.Subscribe(func(_, img *metadata.Image) { n.adoptClusterID(img) })
	b := broker.New(broker.Options{
		Config:       n.cfg,
		ClusterID:    n.clusterID,
		Meta:         n.meta,
		Controller:   n.controller,
		Channel:      n.channel,
		Active:       n.active,
		Quorum:       n.meta,
		KRaftVersion: kraftVersion(n.quorumMode),
		Logger:       n.log.With("component", "broker"),
	})
	n.brokerAPIs = b // closed with the node
	if err := n.serveControllerAPIs(b); err != nil {
		return err
	}
	if err := n.startObservability(); err != nil {
		return err
	}
	close(n.ready)
	n.log.Info("vltava controller started", "node.id", n.cfg.NodeID, "cluster.id", n.ClusterID(),
		"quorum_addr", n.meta.ControllerListener().Addr().String())
	return nil
}

// serveControllerAPIs serves b's controller APIs (broker.ControllerHandler)
// on the connections brokers open to this controller's quorum port.
func (n *Node) serveControllerAPIs(b *broker.Broker) error {
	name := n.controllerListenerName()
	img := n.meta.Image()
	q := n.cfg.ConnectionQuotas(img.BrokerConfig(strconv.Itoa(int(n.cfg.NodeID))), img.BrokerConfig(""))
	n.quorumServer = server.New(server.Config{
		MaxRequestSize: n.cfg.SocketRequestMaxBytes,
		IdleTimeout:    time.Duration(n.cfg.ConnectionsMaxIdleMs) * time.Millisecond,
		Limits:         controllerLimits(name, q),
	}, b.ControllerHandler(), n.log.With("component", "controller-server"))
	proto := n.cfg.ListenerSecurityProtocolMap[name]
	if proto == "" {
		proto = "PLAINTEXT"
	}
	ln := n.meta.ControllerListener()
	// TLS, if any, is the quorum port's (quorum.QuorumTLS); SASL
	// authenticates the Kafka-protocol connections.
	if err := n.quorumServer.Serve(ln, server.ListenerConfig{Name: name, SecurityProtocol: proto, SASL: n.listenerSec[name].sasl}); err != nil {
		return err
	}
	n.log.Info("serving controller APIs on the quorum port", "listener", name, "addr", ln.Addr().String())
	return nil
}

// controllerListenerName is the listener the quorum port's Kafka-protocol
// connections count as.
func (n *Node) controllerListenerName() string {
	if len(n.cfg.ControllerListenerNames) > 0 {
		return n.cfg.ControllerListenerNames[0]
	}
	return "CONTROLLER"
}

// controllerLimits are the limits of the quorum port's Kafka-protocol
// connections (the controller APIs): the controller listener's own
// listener.name.<listener>.max.connections, if set. The broker-wide keys
// bind the broker listeners only.
func controllerLimits(name string, q config.ConnectionQuotas) server.ConnectionLimits {
	n, ok := q.PerListener[name]
	if !ok {
		return server.ConnectionLimits{}
	}
	// Enforcing, the other limits are set to none (MaxInt32 is Kafka's
	// "no limit"; a zero creation rate is none).
	return server.ConnectionLimits{Enforce: true, Max: math.MaxInt32, PerIP: math.MaxInt32, PerListener: map[string]int{name: int(n)}}
}

// connectionLimits turns the connection quotas in effect (max.connections
// and listener.name.<listener>.max.connections, max.connections.per.ip,
// max.connections.per.ip.overrides, max.connection.creation.rate) into the
// server's limits. Override host
// names are resolved here, as Kafka resolves them when the config is
// applied; every address of a name gets its limit.
func connectionLimits(cfg *config.Broker, q config.ConnectionQuotas) (server.ConnectionLimits, error) {
	l := server.ConnectionLimits{
		Enforce:             true,
		Max:                 int(q.Max),
		PerIP:               int(q.PerIP),
		PerIPOverrides:      map[string]int{},
		CreationRate:        int(q.CreationRate),
		InterBrokerListener: cfg.InterBrokerListenerName,
	}
	for name, n := range q.PerListener {
		if l.PerListener == nil {
			l.PerListener = map[string]int{}
		}
		l.PerListener[name] = int(n)
	}
	var errs []error
	for host, n := range q.PerIPOverrides {
		if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil {
			l.PerIPOverrides[ip.String()] = int(n)
			continue
		}
		addrs, err := net.LookupHost(host)
		if err != nil {
			errs = append(errs, fmt.Errorf("max.connections.per.ip.overrides: resolving %s: %w", host, err))
			continue
		}
		for _, a := range addrs {
			l.PerIPOverrides[net.ParseIP(a).String()] = int(n)
		}
	}
	return l, errors.Join(errs...)
}

// applyConnectionQuotas follows dynamic changes of the connection quotas:
// the server gets new limits when the image's broker configs change them.
func (n *Node) applyConnectionQuotas(img *metadata.Image) {
	q := n.cfg.ConnectionQuotas(img.BrokerConfig(strconv.Itoa(int(n.cfg.NodeID))), img.BrokerConfig(""))
	n.connQuotasMu.Lock()
	defer n.connQuotasMu.Unlock()
	if n.server == nil || reflect.DeepEqual(q, n.connQuotas) {
		return
	}
	n.connQuotas = q
	l, err := connectionLimits(n.cfg, q)
	if err != nil {
		n.log.Warn("applying connection quotas", "err", err)
	}
	n.server.SetConnectionLimits(l)
	if n.quorumServer != nil {
		n.quorumServer.SetConnectionLimits(controllerLimits(n.controllerListenerName(), q))
	}
}

// isController reports whether process.roles contains controller.
func isController(cfg *config.Broker) bool { return slices.Contains(cfg.ProcessRoles, "controller") }

// isBroker reports whether process.roles contains broker.
func isBroker(cfg *config.Broker) bool { return slices.Contains(cfg.ProcessRoles, "broker") }

// quorumVoters is controller.quorum.voters as node id -> host:port; without
// voters, this node alone at singleVoterAddr.
func quorumVoters(cfg *config.Broker) map[int32]string {
	voters := map[int32]string{}
	for _, v := range cfg.Voters {
		voters[v.ID] = net.JoinHostPort(v.Host, strconv.Itoa(v.Port))
	}
	if len(voters) == 0 {
		voters[cfg.NodeID] = singleVoterAddr
	}
	return voters
}

// openQuorum opens the metadata log: a raft quorum of controller.quorum.voters
// (this node votes if it is a controller), a dynamic quorum found through
// controller.quorum.bootstrap.servers (voters from storage format or added
// later), or of this node alone when neither is configured. Raft listens on
// the controller listener's address
// (controller.listener.names in listeners), else on the voter address; a
// broker-only node listens next to its advertised host on an ephemeral port.
func openQuorum(cfg *config.Broker, mode quorumMode, mp metadata.MetaProperties, initialVoters []quorum.Member, log *slog.Logger) (*quorum.RaftLog, error) {
	rc := quorum.RaftConfig{
		NodeID: cfg.NodeID,
		Dir:    raftDir(cfg),
		Voter:  isController(cfg),
		Voters: quorumVoters(cfg),
		Logger: log,
	}
	var err error
	if rc.TLS, err = quorumTLS(cfg); err != nil { // interbroker_security.go
		return nil, err
	}
	var ctrlListener *config.Listener
	for _, l := range cfg.Listeners {
		if slices.Contains(cfg.ControllerListenerNames, l.Name) {
			ctrlListener = &l
			break
		}
	}
	switch {
	case mode == dynamicQuorum:
		dynamicRaftConfig(cfg, &rc, mp, initialVoters)
		switch {
		case ctrlListener != nil:
			rc.BindAddr = ctrlListener.Addr()
		case rc.Voter:
			return nil, fmt.Errorf("node %d is a controller (process.roles) but listeners has no controller listener (controller.listener.names=%s) for the metadata quorum", cfg.NodeID, strings.Join(cfg.ControllerListenerNames, ","))
		default:
			host := "127.0.0.1"
			if len(cfg.AdvertisedListeners) > 0 && cfg.AdvertisedListeners[0].Host != "" {
				host = cfg.AdvertisedListeners[0].Host
			}
			rc.BindAddr = net.JoinHostPort(host, "0")
		}
		electionTimeout(cfg, &rc)
	case len(cfg.Voters) == 0:
		// A single-node cluster: one voter, which elects itself at once.
		rc.Voter = true
		rc.BindAddr = "127.0.0.1:0"
		if ctrlListener != nil {
			rc.BindAddr = ctrlListener.Addr()
		}
		rc.HeartbeatTimeout, rc.ElectionTimeout = 50*time.Millisecond, 50*time.Millisecond
		rc.LeaderLeaseTimeout = 50 * time.Millisecond
	case rc.Voter:
		rc.BindAddr = rc.Voters[cfg.NodeID]
		if ctrlListener != nil {
			rc.BindAddr = ctrlListener.Addr()
		}
		rc.AdvertiseAddr = rc.Voters[cfg.NodeID]
		electionTimeout(cfg, &rc)
	default:
		host := "127.0.0.1"
		if len(cfg.AdvertisedListeners) > 0 && cfg.AdvertisedListeners[0].Host != "" {
			host = cfg.AdvertisedListeners[0].Host
		}
		rc.BindAddr = net.JoinHostPort(host, "0")
		if ctrlListener != nil {
			rc.BindAddr = ctrlListener.Addr()
		}
		electionTimeout(cfg, &rc)
	}
	return quorum.OpenRaftLog(rc)
}

// electionTimeout applies controller.quorum.election.timeout.ms to raft's
// heartbeat and election timeouts (raft's own knobs; Kafka's fetch timeout
// plays the heartbeat timeout's role).
func electionTimeout(cfg *config.Broker, rc *quorum.RaftConfig) {
	ms := 1000
	if v, _, ok := cfg.Value("controller.quorum.election.timeout.ms"); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			ms = n
		}
	}
	d := time.Duration(ms) * time.Millisecond
	rc.HeartbeatTimeout, rc.ElectionTimeout = d, d
	rc.LeaderLeaseTimeout = d / 2
}

// endpoints returns this broker's advertised endpoints for its
// registration: advertised.listeners (else the non-controller listeners),
// with wildcard hosts replaced by the host name and port 0 by the bound
// port.
func (n *Node) endpoints() []metadata.Endpoint {
	advertised := n.cfg.AdvertisedListeners
	bound := n.server.Addrs()
	var eps []metadata.Endpoint
	for _, l := range advertised {
		host, port := l.Host, l.Port
		if host == "" || host == "0.0.0.0" || host == "::" {
			if h, err := os.Hostname(); err == nil {
				host = h
			}
		}
		if port == 0 {
			if a, ok := bound[l.Name].(*net.TCPAddr); ok {
				port = a.Port
			}
		}
		eps = append(eps, metadata.Endpoint{Name: l.Name, Host: host, Port: int32(port), SecurityProtocol: securityProtocolID(l.SecurityProtocol)})
	}
	return eps
}

// msDuration converts a millisecond setting to a Duration; values too large
// to represent (Kafka uses Long.MAX_VALUE for "never") become 0, which the
// callee treats as its default.
func msDuration(ms int64) time.Duration {
	if ms <= 0 || ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// securityProtocolID maps a security protocol name to Kafka's id.
func securityProtocolID(name string) int16 {
	switch name {
	case "SSL":
		return 1
	case "SASL_PLAINTEXT":
		return 2
	case "SASL_SSL":
		return 3
	default:
		return 0
	}
}

// Addrs returns the bound address of each listener: the client listeners of
// a broker, and a controller's quorum address under its controller
// listener's name.
func (n *Node) Addrs() map[string]net.Addr {
	addrs := map[string]net.Addr{}
	for _, s := range []*server.Server{n.server, n.quorumServer} {
		if s != nil {
			maps.Copy(addrs, s.Addrs())
		}
	}
	return addrs
}

// ClusterID is the cluster's id.
func (n *Node) ClusterID() string {
	n.clusterIDMu.Lock()
	defer n.clusterIDMu.Unlock()
	return n.clusterID
}

// Handler is the node's Kafka API handler (nil on a controller-only node):
// tests send it requests as a principal of their choosing.
func (n *Node) Handler() server.Handler { return n.handler }

// ControllerHandler is the handler of the controller APIs this node
// serves on its quorum port (nil on a broker-only node): tests send it
// requests as a principal of their choosing.
func (n *Node) ControllerHandler() server.Handler {
	if n.quorumServer == nil {
		return nil
	}
	return n.brokerAPIs.ControllerHandler()
}

// NodeID is node.id.
func (n *Node) NodeID() int32 { return n.cfg.NodeID }

// Metadata is the node's metadata log (its image and quorum state).
func (n *Node) Metadata() *quorum.RaftLog { return n.meta }

// IsActiveController reports whether this node currently runs the
// controller duties.
func (n *Node) IsActiveController() bool { return n.active != nil && n.active.IsActive() }

// controlledShutdownTimeout bounds how long Close waits for the controller
// to move this broker's leaderships away.
const controlledShutdownTimeout = 10 * time.Second

// Close shuts the node down cleanly: a controlled shutdown first (the
// controller moves this broker's leaderships to other ISR members and
// fences it; bounded, so a node that cannot reach a controller still
// stops), then the listeners, the logs (writing their checkpoints and the
// clean-shutdown marker) and the metadata quorum.
func (n *Node) Close() error {
	return n.closeAll(true)
}

func (n *Node) closeAll(controlled bool) error {
	var errs []error
	n.closeConnect() // a client of this node: first, while the broker serves it
	errs = append(errs, n.closeConsole())
	if n.lifecycle != nil {
		if controlled {
			ctx, cancel := context.WithTimeout(context.Background(), controlledShutdownTimeout)
			if err := n.lifecycle.ControlledShutdown(ctx); err != nil {
				n.log.Warn("controlled shutdown did not complete; stopping anyway", "err", err)
			}
			cancel()
		}
		n.lifecycle.Close()
	}
	errs = append(errs, n.closeRest())
	errs = append(errs, n.closeSchemaRegistry())
	errs = append(errs, n.closeObservability())
	if n.server != nil {
		errs = append(errs, n.server.Close())
	}
	if n.brokerAPIs != nil {
		n.brokerAPIs.Close() // its connections to other brokers
	}

	n.tiered.close() // after the listeners, before the logs it reads
	if n.groups != nil {
		// After the listeners: no request is left to park on a group.
		n.groups.Close()
	}
	if n.txns != nil {
		n.txns.Close()
		n.txnNet.Close()
	}
	if n.replicas != nil {
		n.replicas.Close() // before the logs the fetchers append to
	}
	if n.store != nil {
		errs = append(errs, n.store.Close())
	}
	if controlled && n.meta != nil {
		// A leader hands the quorum to another voter while its
		// controller endpoint still answers, so the brokers move to the
		// new active controller without waiting for an election timeout.
		n.meta.TransferLeadership(controlledShutdownTimeout / 2)
	}
	if n.quorumServer != nil {
		// Last before the controller duties stop: while this node still
		// leads the quorum, the other brokers' heartbeats and controlled
		// shutdowns reach it here.
		errs = append(errs, n.quorumServer.Close())
	}
	if n.active != nil {
		n.active.Close()
	}
	if n.channel != nil {
		n.channel.Close()
	}
	if n.meta != nil {
		errs = append(errs, n.meta.Close())
	}
	return errors.Join(errs...)
}
