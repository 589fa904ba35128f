package broker

// __transaction_state, created on the first FindCoordinator for a
// transactional id, as Kafka's TransactionStateManager creates it:
// transaction.state.log.num.partitions partitions,
// transaction.state.log.replication.factor replicas (never fewer: while
// fewer brokers are registered and unfenced the answer is
// COORDINATOR_NOT_AVAILABLE), min.insync.replicas from
// transaction.state.log.min.isr, segment.bytes from
// transaction.state.log.segment.bytes, compacted, uncompressed, and no
// unclean leader election.

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
)

// findTxnCoordinator is FindCoordinator for key type 1.
func (b *Broker) findTxnCoordinator(ctx context.Context, id, listener string) (int32, string, int32, error) {
	if b.txns == nil {
		return 0, "", 0, errNoTxnCoordinator
	}
	if id == "" {
		return 0, "", 0, fmt.Errorf("%w: empty transactional id", kerr.InvalidRequest)
	}
	if err := b.ensureTxnStateTopic(ctx); err != nil {
		return 0, "", 0, err
	}
	return b.partitionLeaderEndpoint(metadata.TransactionStateTopic, b.txns.PartitionFor(id), listener)
}

// ensureTxnStateTopic creates __transaction_state if it does not exist
// (concurrent callers share one creation, no lock held across the
// controller call) and then has the coordinator load its partitions led
// here.
func (b *Broker) ensureTxnStateTopic(ctx context.Context) error {
	return b.ensureInternalTopic(ctx, metadata.TransactionStateTopic, b.createTxnStateTopic, b.txns.ApplyImage)
}

func (b *Broker) createTxnStateTopic(ctx context.Context) error {
	img := b.meta.Image()
	if _, exists := img.Topic(metadata.TransactionStateTopic); exists {
		return nil
	}
	rf, live := int(b.cfg.TransactionStateLogReplicationFactor), len(img.ActiveBrokerIDs())
	if live < rf {
		return fmt.Errorf("%w: %s needs transaction.state.log.replication.factor=%d brokers, %d are registered and unfenced",
			kerr.CoordinatorNotAvailable, metadata.TransactionStateTopic, rf, live)
	}
	compact, uncompressed, unclean := "compact", "uncompressed", "false"
	segment := strconv.Itoa(int(b.cfg.TransactionStateLogSegmentBytes))
	minISR := strconv.Itoa(int(b.cfg.TransactionStateLogMinISR))
	res := b.createTopics(ctx, []rules.CreateTopic{{
		Name:              metadata.TransactionStateTopic,
		NumPartitions:     b.cfg.TransactionStateLogNumPartitions,
		ReplicationFactor: int16(rf),
		Configs: map[string]*string{
			"cleanup.policy":                 &compact,
			"compression.type":               &uncompressed,
			"segment.bytes":                  &segment,
			"min.insync.replicas":            &minISR,
			"unclean.leader.election.enable": &unclean,
		},
	}})
	if err := res[0].Err; err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		b.log.Warn("creating the transaction state topic", "err", err)
		return fmt.Errorf("%w: creating %s: %v", kerr.CoordinatorNotAvailable, metadata.TransactionStateTopic, err)
	}
	b.log.Info("created the transaction state topic", "partitions", b.cfg.TransactionStateLogNumPartitions, "replication.factor", rf)
	return nil
}
