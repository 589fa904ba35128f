// Package node assembles a Vltava node from its parts: configuration, the
// metadata log and controller, the storage manager, the partitions, the
// Kafka API handlers and the listeners. It owns start-up and shutdown order.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/vltava/vltava/internal/broker"
	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/server"
	"github.com/vltava/vltava/internal/storage"
)

// Node is a running broker.
type Node struct {
	cfg        *config.Broker
	log        *slog.Logger
	meta       *metadata.LocalLog
	store      *storage.Manager
	partitions *partition.Manager
	groups     *group.Coordinator
	server     *server.Server
	clusterID  string
}

// Start opens the node's state and binds its listeners.
func Start(cfg *config.Broker, log *slog.Logger) (_ *Node, err error) {
	if log == nil {
		log = slog.Default()
	}
	n := &Node{cfg: cfg, log: log}
	defer func() {
		if err != nil {
			n.closeAll()
		}
	}()
	for _, d := range cfg.LogDirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("log dir %s: %w", d, err)
		}
	}
	mp, err := metadata.LoadOrCreateMetaProperties(cfg.LogDirs, cfg.NodeID)
	if err != nil {
		return nil, err
	}
	n.clusterID = mp.ClusterID

	metaDir := cfg.MetadataLogDir
	if metaDir == "" {
		metaDir = cfg.LogDirs[0]
	}
	n.meta, err = metadata.OpenLocalLog(metaDir, log.With("component", "metadata"))
	if err != nil {
		return nil, fmt.Errorf("opening metadata log: %w", err)
	}
	controller := metadata.NewController(n.meta, metadata.ControllerConfig{
		NodeID:                   cfg.NodeID,
		DefaultNumPartitions:     cfg.NumPartitions,
		DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		ValidateTopicConfigs:     config.ValidateTopicConfigs,
	})

	n.store, err = storage.OpenManager(storage.ManagerConfig{
		Dirs:                   cfg.LogDirs,
		RetentionCheckInterval: msDuration(int64(cfg.LogRetentionCheckIntervalMs)),
		// Kafka's default scheduler interval is "never"; storage then
		// checks flush.ms every second, so a topic that sets flush.ms
		// gets it without also tuning the scheduler.
		FlushCheckInterval: msDuration(int64(cfg.LogFlushSchedulerIntervalMs)),
		CheckpointInterval: msDuration(int64(cfg.LogFlushOffsetCheckpointIntervalMs)),
		Logger:             log.With("component", "storage"),
	})
	if err != nil {
		return nil, fmt.Errorf("opening log dirs: %w", err)
	}

	n.partitions = partition.NewManager(cfg.NodeID, cfg, n.store, log.With("component", "partitions"))
	n.groups = group.NewCoordinator(group.Options{
		Config: group.ConfigFromBroker(cfg),
		Log:    group.PartitionLog{NodeID: cfg.NodeID, Partitions: n.partitions},
		Logger: log.With("component", "groups"),
	})
	// Every committed metadata change reaches the partitions in order,
	// then the group coordinator, which loads the __consumer_offsets
	// partitions that became led here.
	n.meta.Subscribe(func(_, img *metadata.Image) {
		if err := n.partitions.Apply(img); err != nil {
			log.Error("applying metadata to partitions", "err", err)
		}
		n.groups.ApplyImage(img)
	})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.register(ctx, controller); err != nil {
		return nil, err
	}
	if err := n.partitions.Apply(n.meta.Image()); err != nil {
		return nil, fmt.Errorf("opening partitions: %w", err)
	}
	if err := n.partitions.RemoveStray(); err != nil {
		log.Warn("removing stray logs", "err", err)
	}
	n.store.Start()
	n.groups.ApplyImage(n.meta.Image())

	b := broker.New(broker.Options{
		Config:     cfg,
		ClusterID:  n.clusterID,
		Meta:       n.meta,
		Controller: controller,
		Partitions: n.partitions,
		Groups:     n.groups,
		Logger:     log.With("component", "broker"),
	})
	var lcs []server.ListenerConfig
	for _, l := range cfg.Listeners {
		lcs = append(lcs, server.ListenerConfig{
			Name:             l.Name,
			SecurityProtocol: l.SecurityProtocol,
			Addr:             net.JoinHostPort(l.Host, strconv.Itoa(l.Port)),
		})
	}
	n.server = server.New(server.Config{
		Listeners:      lcs,
		MaxRequestSize: cfg.SocketRequestMaxBytes,
		IdleTimeout:    time.Duration(cfg.ConnectionsMaxIdleMs) * time.Millisecond,
	}, b, log.With("component", "server"))
	if err := n.server.Start(); err != nil {
		return nil, err
	}
	for name, addr := range n.server.Addrs() {
		log.Info("listening", "listener", name, "addr", addr.String())
	}
	log.Info("vltava node started", "node.id", cfg.NodeID, "cluster.id", n.clusterID,
		"topics", len(n.meta.Image().Topics()), "partitions", len(n.partitions.All()))
	return n, nil
}

// register records this broker and its advertised endpoints in the
// metadata, unless the image already holds the same registration.
func (n *Node) register(ctx context.Context, c *metadata.Controller) error {
	advertised := n.cfg.AdvertisedListeners
	if len(advertised) == 0 {
		advertised = n.cfg.Listeners
	}
	var eps []metadata.Endpoint
	for _, l := range advertised {
		host := l.Host
		if host == "" || host == "0.0.0.0" || host == "::" {
			if h, err := os.Hostname(); err == nil {
				host = h
			}
		}
		eps = append(eps, metadata.Endpoint{Name: l.Name, Host: host, Port: int32(l.Port), SecurityProtocol: securityProtocolID(l.SecurityProtocol)})
	}
	for _, br := range n.meta.Image().Brokers() {
		if br.ID == n.cfg.NodeID && slices.Equal(br.Endpoints, eps) && br.Rack == n.cfg.BrokerRack && !br.Fenced {
			return nil
		}
	}
	err := c.RegisterBroker(ctx, metadata.RegisterBrokerRecord{
		BrokerID:      n.cfg.NodeID,
		IncarnationID: metadata.NewUuid(),
		BrokerEpoch:   time.Now().UnixMilli(),
		Endpoints:     eps,
		Rack:          n.cfg.BrokerRack,
	})
	if err != nil {
		return fmt.Errorf("registering broker %d: %w", n.cfg.NodeID, err)
	}
	return nil
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

// Addrs returns the bound address of each listener.
func (n *Node) Addrs() map[string]net.Addr { return n.server.Addrs() }

// ClusterID is the cluster's id from meta.properties.
func (n *Node) ClusterID() string { return n.clusterID }

// Close stops the listeners, then closes the logs cleanly (writing their
// checkpoints and the clean-shutdown marker) and the metadata log.
func (n *Node) Close() error {
	return n.closeAll()
}

func (n *Node) closeAll() error {
	var errs []error
	if n.server != nil {
		errs = append(errs, n.server.Close())
	}
	if n.groups != nil {
		// After the listeners: no request is left to park on a group.
		n.groups.Close()
	}
	if n.store != nil {
		errs = append(errs, n.store.Close())
	}
	if n.meta != nil {
		errs = append(errs, n.meta.Close())
	}
	return errors.Join(errs...)
}
