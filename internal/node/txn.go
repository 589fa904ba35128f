package node

import (
	"context"
	"log/slog"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/security/clientauth"
	"github.com/vltava/vltava/internal/txn"
)

// newTxnCoordinator assembles the transaction coordinator from the broker
// config: its state goes to this node's __transaction_state partitions,
// its markers to the partition leaders' inter-broker listeners, and its
// producer ids come from ids (the broker's block from the controller).
func (n *Node) newTxnCoordinator(cfg *config.Broker, log *slog.Logger, sec *clientauth.Security, ids func(context.Context) (int64, error)) (*txn.Coordinator, *txn.NetTransport) {
	// Markers go to the leaders' inter-broker listener with its security
	// protocol, as replica fetches do.
	transport := &txn.NetTransport{Image: n.meta.Image, Listener: cfg.InterBrokerListenerName, ClientID: "vltava-txn-coordinator", Security: sec}
	c := txn.NewCoordinator(txn.Options{
		Config: txn.Config{
			NodeID:         cfg.NodeID,
			NumPartitions:  cfg.TransactionStateLogNumPartitions,
			MaxTimeout:     msDuration(int64(cfg.TransactionMaxTimeoutMs)),
			IDExpiration:   msDuration(int64(cfg.TransactionalIDExpirationMs)),
			AbortInterval:  msDuration(int64(cfg.TransactionAbortTimedOutCleanupIntervalMs)),
			RemoveInterval: msDuration(int64(cfg.TransactionRemoveExpiredCleanupIntervalMs)),
			LoadBufferSize: int(cfg.TransactionStateLogLoadBufferSize),
			MarkerTimeout:  msDuration(int64(cfg.RequestTimeoutMs)),
		},
		Log:         txn.PartitionLog{NodeID: cfg.NodeID, Partitions: n.partitions, Timeout: msDuration(int64(cfg.RequestTimeoutMs))},
		ProducerIDs: ids,
		Markers:     transport,
		Logger:      log.With("component", "txn"),
	})
	return c, transport
}
