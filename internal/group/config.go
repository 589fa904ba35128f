package group

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/record"
)

// Config is what the coordinator takes from the broker's configuration.
type Config struct {
	NodeID int32
	// NumPartitions is offsets.topic.num.partitions, used to place groups
	// until __consumer_offsets exists (then its real partition count is).
	NumPartitions int32
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms.
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound a member's session
	// (group.min/max.session.timeout.ms).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// MaxSize is group.max.size.
	MaxSize int
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes.
	OffsetMetadataMaxBytes int
	// OffsetsRetention is offsets.retention.minutes.
	OffsetsRetention time.Duration
	// RetentionCheckInterval is offsets.retention.check.interval.ms.
	RetentionCheckInterval time.Duration
	// LoadBufferSize is offsets.load.buffer.size: bytes read per step when
	// loading a partition.
	LoadBufferSize int
	// CommitCodec is offsets.topic.compression.codec: the codec of the
	// batches the coordinator appends (CodecNone by default).
	CommitCodec record.Codec
	// ConsumerSessionTimeout is group.consumer.session.timeout.ms, the
	// session of consumer-protocol (KIP-848) members.
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is group.consumer.heartbeat.interval.ms.
	ConsumerHeartbeatInterval time.Duration
	// ConsumerMaxSize is group.consumer.max.size.
	ConsumerMaxSize int
	// ConsumerAssignors is group.consumer.assignors: the server-side
	// assignors consumer groups may use, the first being the default.
	// Empty means Kafka's default, uniform then range.
	ConsumerAssignors []string
	// ConsumerProtocolDisabled is set when
	// group.coordinator.rebalance.protocols lacks "consumer": then
	// ConsumerGroupHeartbeat is neither advertised nor answered.
	ConsumerProtocolDisabled bool
	// MigrationPolicy is group.consumer.migration.policy.
	MigrationPolicy MigrationPolicy
}

// MigrationPolicy is group.consumer.migration.policy (Kafka's
// ConsumerGroupMigrationPolicy): which online conversions of a live group
// between the classic and consumer protocols are allowed.
type MigrationPolicy string

// The policies.
const (
	MigrationDisabled      MigrationPolicy = "disabled"
	MigrationUpgrade       MigrationPolicy = "upgrade"
	MigrationDowngrade     MigrationPolicy = "downgrade"
	MigrationBidirectional MigrationPolicy = "bidirectional"
)

// upgradeAllowed: a classic group may become a consumer group when a
// consumer-protocol member joins it.
func (p MigrationPolicy) upgradeAllowed() bool {
	return p == MigrationUpgrade || p == MigrationBidirectional
}

// downgradeAllowed: a consumer group left with classic members only may
// become a classic group again.
func (p MigrationPolicy) downgradeAllowed() bool {
	return p == MigrationDowngrade || p == MigrationBidirectional
}

// ConfigFromBroker derives the coordinator's Config from the broker's and
// checks the group settings against each other as Kafka's
// GroupCoordinatorConfig does at start: an error names the key.
func ConfigFromBroker(b *config.Broker) (Config, error) {
	ms := func(v int32) time.Duration { return time.Duration(v) * time.Millisecond }
	cfg := Config{
		NodeID:                 b.NodeID,
		NumPartitions:          b.OffsetsTopicNumPartitions,
		InitialRebalanceDelay:  ms(b.GroupInitialRebalanceDelayMs),
		MinSessionTimeout:      ms(b.GroupMinSessionTimeoutMs),
		MaxSessionTimeout:      ms(b.GroupMaxSessionTimeoutMs),
		MaxSize:                int(b.GroupMaxSize),
		OffsetMetadataMaxBytes: int(b.OffsetMetadataMaxBytes),
		OffsetsRetention:       time.Duration(b.OffsetsRetentionMinutes) * time.Minute,
		RetentionCheckInterval: time.Duration(b.OffsetsRetentionCheckIntervalMs) * time.Millisecond,
		LoadBufferSize:         int(b.OffsetsLoadBufferSize),
		CommitCodec:            record.Codec(b.OffsetsTopicCompressionCodec),

		ConsumerSessionTimeout:    ms(b.GroupConsumerSessionTimeoutMs),
		ConsumerHeartbeatInterval: ms(b.GroupConsumerHeartbeatMs),
		ConsumerMaxSize:           int(b.GroupConsumerMaxSize),
		ConsumerAssignors:         b.GroupConsumerAssignors,
	}
	protocols := b.GroupCoordinatorProtocols
	if !slices.Contains(protocols, "classic") {
		return cfg, fmt.Errorf("group.coordinator.rebalance.protocols: disabling the 'classic' protocol is not supported (got %q)", strings.Join(protocols, ","))
	}
	if slices.Contains(protocols, "share") {
		// KIP-932 share groups are not implemented: refused, not ignored.
		return cfg, fmt.Errorf("group.coordinator.rebalance.protocols: the 'share' protocol (KIP-932 share groups) is not supported")
	}
	cfg.ConsumerProtocolDisabled = !slices.Contains(protocols, "consumer")
	policy, _, _ := b.Value("group.consumer.migration.policy")
	cfg.MigrationPolicy = MigrationPolicy(strings.ToLower(policy))
	if err := checkConsumerBounds(b); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// checkConsumerBounds is GroupCoordinatorConfig's start-up check of the
// consumer-protocol timeouts: each default lies within its min and max,
// and a member heartbeats more often than its session lasts.
func checkConsumerBounds(b *config.Broker) error {
	get := func(key string) (int64, error) {
		v, _, _ := b.Value(key)
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not an integer", key, v)
		}
		return n, nil
	}
	for _, k := range []struct{ value, min, max string }{
		{"group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"},
		{"group.consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"},
	} {
		v, err := get(k.value)
		if err != nil {
			return err
		}
		lo, err := get(k.min)
		if err != nil {
			return err
		}
		hi, err := get(k.max)
		if err != nil {
			return err
		}
		switch {
		case hi < lo:
			return fmt.Errorf("%s (%d) must be greater than or equal to %s (%d)", k.max, hi, k.min, lo)
		case v < lo:
			return fmt.Errorf("%s (%d) must be greater than or equal to %s (%d)", k.value, v, k.min, lo)
		case v > hi:
			return fmt.Errorf("%s (%d) must be less than or equal to %s (%d)", k.value, v, k.max, hi)
		}
	}
	if b.GroupConsumerHeartbeatMs >= b.GroupConsumerSessionTimeoutMs {
		return fmt.Errorf("group.consumer.heartbeat.interval.ms (%d) must be less than group.consumer.session.timeout.ms (%d)",
			b.GroupConsumerHeartbeatMs, b.GroupConsumerSessionTimeoutMs)
	}
	return nil
}

// ConsumerProtocolEnabled reports whether group.coordinator.rebalance.protocols
// includes "consumer": without it Kafka neither advertises nor serves the
// KIP-848 APIs (ConsumerGroupHeartbeat, ConsumerGroupDescribe).
func (c *Coordinator) ConsumerProtocolEnabled() bool { return !c.cfg.ConsumerProtocolDisabled }
