package node

import (
	"errors"
	"fmt"
	"slices"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/connect/runner"
	"github.com/vltava/vltava/internal/connect/worker"
	"github.com/vltava/vltava/internal/logging"
)

// embeddedWorkerDefaults are the embedded Connect worker's settings where
// the connect.* keys leave them unset: connect-distributed.properties'
// group and topic names, and replication factors that follow the broker's
// default.replication.factor, so a single node needs no setting at all.
var embeddedWorkerDefaults = map[string]string{
	worker.KeyGroupID:     "connect-cluster",
	worker.KeyConfigTopic: "connect-configs",
	worker.KeyOffsetTopic: "connect-offsets",
	worker.KeyStatusTopic: "connect-status",
	worker.KeyConfigRF:    "-1",
	worker.KeyOffsetRF:    "-1",
	worker.KeyStatusRF:    "-1",
}

// startConnect starts the embedded Connect worker (connect.enable): a
// distributed worker, like `vltava connect distributed`, that is a Kafka
// client of this node's first PLAINTEXT listener unless
// connect.bootstrap.servers names other brokers. It has no private path
// into the broker. Nodes of one cluster with connect.enable form one
// Connect cluster (one group.id).
func (n *Node) startConnect() error {
	if !n.cfg.ConnectEnable {
		return nil
	}
	props := make(map[string]string, len(n.cfg.ConnectWorker)+len(embeddedWorkerDefaults)+1)
	for k, v := range embeddedWorkerDefaults {
		props[k] = v
	}
	for k, v := range n.cfg.ConnectWorker {
		props[k] = v
	}
	if _, set := props[worker.KeyBootstrap]; !set {
		addr := ""
		for _, l := range n.cfg.Listeners {
			if l.SecurityProtocol != "PLAINTEXT" || slices.Contains(n.cfg.ControllerListenerNames, l.Name) {
				continue
			}
			if a, ok := n.server.Addrs()[l.Name]; ok {
				addr = a.String()
				break
			}
		}
		if addr == "" {
			return errors.New("connect.enable: the embedded Connect worker needs a PLAINTEXT listener of this node, or connect.bootstrap.servers with the connect.security.protocol, connect.sasl.* and connect.ssl.* settings to reach the brokers")
		}
		props[worker.KeyBootstrap] = addr
	}
	r, err := runner.Start(runner.Options{
		Mode:   worker.Distributed,
		Worker: props,
		Log:    n.log.With("component", "connect"),
		Levels: logging.LevelsOf(n.log),
	})
	if err != nil {
		// The worker names its keys without the prefix; the node's
		// settings carry it.
		return fmt.Errorf("connect.enable: the embedded Connect worker (settings %s<key>): %w", config.ConnectPrefix, err)
	}
	n.connect = r
	return nil
}

// closeConnect stops the embedded Connect worker: its tasks commit their
// offsets while the broker still serves them.
func (n *Node) closeConnect() {
	if n.connect != nil {
		n.connect.Close()
	}
}

// ConnectAddrs are the embedded Connect worker's REST addresses (none
// without one).
func (n *Node) ConnectAddrs() []string {
	if n.connect == nil {
		return nil
	}
	var out []string
	for _, a := range n.connect.Addrs() {
		out = append(out, a.String())
	}
	return out
}
