package broker

// FindCoordinator (key 10), v0-v6.
//
// Key type 0 (group): the coordinator is the leader of the group's
// __consumer_offsets partition, abs(javaHashCode(group)) % partitions. The
// topic is created on first need, as Kafka does, with
// offsets.topic.num.partitions partitions, replication factor
// offsets.topic.replication.factor, cleanup.policy=compact,
// compression.type=producer and segment.bytes=offsets.topic.segment.bytes;
// creation is synchronous, so the first answer already names the
// coordinator. While fewer unfenced brokers are registered than the
// replication factor, the answer is COORDINATOR_NOT_AVAILABLE and the topic
// is created on a later request once they are: like Kafka, the replication
// factor is never cut to the brokers at hand. v4+ batches keys (KIP-699); errors then go per key.
//
// Key type 1 (transaction): the coordinator is the leader of the
// transactional id's __transaction_state partition,
// abs(javaHashCode(id)) % partitions (txn_state_topic.go creates the topic
// on first need the same way: transaction.state.log.num.partitions,
// .replication.factor, .min.isr, .segment.bytes, compacted). Other key
// types (2: share groups, KIP-932) are INVALID_REQUEST.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.FindCoordinator, 0, 6, (*Broker).handleFindCoordinator) }

func (b *Broker) handleFindCoordinator(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if r.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		c.NodeID, c.Port = -1, -1
		var nodeID, port int32
		var host string
		err := b.authorizeCoordinatorKey(r, req.CoordinatorType, key)
		if err == nil {
			nodeID, host, port, err = b.findCoordinator(ctx, req.CoordinatorType, key, r.Conn.Listener)
		}
		if err != nil {
			c.ErrorCode = b.errCode(err)
			c.ErrorMessage = errMessage(err)
		} else {
			c.NodeID, c.Host, c.Port = nodeID, host, port
		}
		if r.Version < 4 {
			resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
			resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
			break
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp, nil
}

// authorizeCoordinatorKey is Kafka's check: DESCRIBE on the group
// (GROUP_AUTHORIZATION_FAILED) or the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) whose coordinator is asked for.
func (b *Broker) authorizeCoordinatorKey(r *server.Request, keyType int8, key string) error {
	switch {
	case keyType == 0 && !b.allowedGroup(r, key, acl.OpDescribe):
		return kerr.GroupAuthorizationFailed
	case keyType == 1 && !b.allowed(r, acl.ResourceTransactionalID, key, acl.OpDescribe):
		return kerr.TransactionalIDAuthorizationFailed
	}
	return nil
}

func (b *Broker) findCoordinator(ctx context.Context, keyType int8, key, listener string) (int32, string, int32, error) {
	switch keyType {
	case 0:
	case 1:
		return b.findTxnCoordinator(ctx, key, listener)
	default:
		return 0, "", 0, fmt.Errorf("%w: unknown coordinator key type %d", kerr.InvalidRequest, keyType)
	}
	if b.groups == nil {
		return 0, "", 0, kerr.CoordinatorNotAvailable
	}
	if err := b.ensureOffsetsTopic(ctx); err != nil {
		return 0, "", 0, err
	}
	return b.partitionLeaderEndpoint(metadata.ConsumerOffsetsTopic, b.groups.PartitionFor(key), listener)
}

// partitionLeaderEndpoint is the leader of an internal topic's partition
// (a coordinator) on listener: COORDINATOR_NOT_AVAILABLE without one.
func (b *Broker) partitionLeaderEndpoint(topic string, partition int32, listener string) (int32, string, int32, error) {
	img := b.meta.Image()
	pi, ok := img.Partition(topic, partition)
	if !ok || pi.Leader < 0 {
		return 0, "", 0, kerr.CoordinatorNotAvailable
	}
	for _, ep := range b.brokerEndpoints(img, listener) {
		if ep.NodeID == pi.Leader {
			return ep.NodeID, ep.Host, ep.Port, nil
		}
	}
	return 0, "", 0, kerr.CoordinatorNotAvailable
}

// ensureOffsetsTopic creates __consumer_offsets if it does not exist and
// then makes sure the coordinator leads (and loads) its partitions led
// here. Concurrent callers share one creation (the auto-creation
// singleflight, keyed by the topic's name); no lock is held across the
// controller call. Once the topic exists the node's image listener keeps
// the coordinator current, so a FindCoordinator does no more.
func (b *Broker) ensureOffsetsTopic(ctx context.Context) error {
	return b.ensureInternalTopic(ctx, metadata.ConsumerOffsetsTopic, b.createOffsetsTopic, b.groups.ApplyImage)
}

// ensureInternalTopic creates an internal topic (__consumer_offsets,
// __transaction_state) with create if it does not exist, then hands the
// image to its coordinator (apply). Concurrent callers share one creation
// (the auto-creation singleflight, keyed by the topic's name), bounded by
// request.timeout.ms; no lock is held across the controller call.
func (b *Broker) ensureInternalTopic(ctx context.Context, topic string, create func(context.Context) error, apply func(*metadata.Image)) error {
	if _, ok := b.meta.Image().Topic(topic); ok {
		return nil
	}
	done := b.autoCreates.DoChan(topic, func() (any, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(b.cfg.RequestTimeoutMs)*time.Millisecond)
		defer cancel()
		return nil, create(cctx)
	})
	select {
	case r := <-done:
		if r.Err != nil {
			return r.Err
		}
	case <-ctx.Done():
		return fmt.Errorf("%w: waiting for %s to be created: %v", kerr.CoordinatorNotAvailable, topic, ctx.Err())
	}
	b.awaitMetadata(ctx)
	apply(b.meta.Image())
	return nil
}

// createOffsetsTopic is one creation of __consumer_offsets with
// offsets.topic.replication.factor replicas: COORDINATOR_NOT_AVAILABLE while
// fewer brokers are registered and unfenced, as Kafka, never fewer replicas.
func (b *Broker) createOffsetsTopic(ctx context.Context) error {
	img := b.meta.Image()
	if _, exists := img.Topic(metadata.ConsumerOffsetsTopic); exists {
		return nil
	}
	rf, live := int(b.cfg.OffsetsTopicReplicationFactor), len(img.ActiveBrokerIDs())
	if live < rf {
		return fmt.Errorf("%w: %s needs offsets.topic.replication.factor=%d brokers, %d are registered and unfenced",
			kerr.CoordinatorNotAvailable, metadata.ConsumerOffsetsTopic, rf, live)
	}
	compact, producer := "compact", "producer"
	segment := strconv.Itoa(int(b.cfg.OffsetsTopicSegmentBytes))
	res := b.createTopics(ctx, []rules.CreateTopic{{
		Name:              metadata.ConsumerOffsetsTopic,
		NumPartitions:     b.cfg.OffsetsTopicNumPartitions,
		ReplicationFactor: int16(rf),
		Configs: map[string]*string{
			"cleanup.policy":   &compact,
			"compression.type": &producer,
			"segment.bytes":    &segment,
		},
	}})
	if err := res[0].Err; err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		b.log.Warn("creating the offsets topic", "err", err)
		return fmt.Errorf("%w: creating %s: %v", kerr.CoordinatorNotAvailable, metadata.ConsumerOffsetsTopic, err)
	}
	b.log.Info("created the offsets topic", "partitions", b.cfg.OffsetsTopicNumPartitions, "replication.factor", rf)
	return nil
}

// errNoCoordinator answers group requests on a broker assembled without a
// group coordinator (tests of other APIs).
var errNoCoordinator = fmt.Errorf("%w: no group coordinator on this broker", kerr.CoordinatorNotAvailable)
