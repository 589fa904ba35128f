package rules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// ControllerConfig configures a Controller. The zero value of every field is
// usable and means Kafka's default.
type ControllerConfig struct {
	// NodeID is this node's id (node.id).
	NodeID int32
	// DefaultNumPartitions is num.partitions, used when a CreateTopics
	// request asks for -1 partitions. <= 0 means Kafka's default, 1.
	DefaultNumPartitions int32
	// DefaultReplicationFactor is default.replication.factor. <= 0 means
	// Kafka's default, 1.
	DefaultReplicationFactor int16
	// LiveBrokers returns the brokers replicas may be placed on. nil means
	// the registered, unfenced brokers of the current image.
	LiveBrokers func() []int32
	// ValidateTopicConfigs checks a topic's complete set of config overrides
	// (after applying the requested change). A non-nil error rejects the
	// request with INVALID_CONFIG (or with the kerr code it wraps).
	ValidateTopicConfigs func(configs map[string]string) error
	// ValidateTopicChange checks an altered topic's overrides against the
	// ones they replace (a transition the new set alone cannot show).
	ValidateTopicChange func(old, next map[string]string) error
	// ValidateBrokerConfigs does the same for a broker or the cluster
	// default (resource "").
	ValidateBrokerConfigs func(resourceName string, configs map[string]string) error
	// ValidateGroupConfigs does the same for a consumer group's configs
	// (KIP-848), against this controller's group.consumer.* bounds as
	// Kafka's ControllerConfigurationValidator does.
	ValidateGroupConfigs func(configs map[string]string) error
	// UncleanLeaderElection is unclean.leader.election.enable: elect an
	// out-of-sync replica when no ISR member can lead.
	UncleanLeaderElection bool
	// DeleteTopicDisabled is delete.topic.enable=false: DeleteTopics fails
	// with TOPIC_DELETION_DISABLED.
	DeleteTopicDisabled bool
	// BootstrapRecords returns the records `storage format` left for the
	// cluster's first commit (--add-scram credentials); committed with
	// the cluster id, so exactly once per cluster. nil: none.
	BootstrapRecords func() ([]metadata.Record, error)
	// Logger receives controller events; nil discards them.
	Logger *slog.Logger
	// Rand seeds replica placement; nil uses a random seed. Tests set it for
	// reproducible assignments.
	Rand *rand.Rand
}

// ProducerIDBlockSize is the number of producer ids handed out per
// AllocateProducerIDs call when the caller asks for a default block, like
// KRaft's ProducerIdControlManager.
const ProducerIDBlockSize = 1000

// Controller validates metadata changes against the current image and
// commits them as records to the Log, like KRaft's QuorumController. All
// operations are serialized by mu: validation and commit happen in one
// critical section, so two concurrent creates of the same topic cannot both
// pass validation. Reads of the image (Log.Image) never take mu.
type Controller struct {
	log    metadata.Log
	cfg    ControllerConfig
	logger *slog.Logger

	mu struct {
		sync.Mutex
		rng *rand.Rand // replica placement randomness
	}
}

// NewController returns a controller committing to log.
func NewController(log metadata.Log, cfg ControllerConfig) *Controller {
	if cfg.DefaultNumPartitions <= 0 {
		cfg.DefaultNumPartitions = 1
	}
	if cfg.DefaultReplicationFactor <= 0 {
		cfg.DefaultReplicationFactor = 1
	}
	c := &Controller{log: log, cfg: cfg, logger: cfg.Logger}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	c.mu.rng = cfg.Rand
	if c.mu.rng == nil {
		c.mu.rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return c
}

// Image returns the latest applied image.
func (c *Controller) Image() *metadata.Image { return c.log.Image() }

// liveBrokersLocked returns the sorted ids replicas may be placed on.
func (c *Controller) liveBrokersLocked(img *metadata.Image) []int32 {
	if c.cfg.LiveBrokers != nil {
		ids := slices.Clone(c.cfg.LiveBrokers())
		slices.Sort(ids)
		return slices.Compact(ids)
	}
	return img.ActiveBrokerIDs()
}

// RegisterBroker records a broker registration. The controller assigns the
// broker epoch (stored in the image; Broker(id).Epoch): it is greater than
// every epoch handed out before, as Kafka's (the registration record's
// offset) is.
func (c *Controller) RegisterBroker(ctx context.Context, reg metadata.RegisterBrokerRecord) error {
	if reg.BrokerID < 0 {
		return fmt.Errorf("%w: Invalid broker id %d", kerr.InvalidRegistration, reg.BrokerID)
	}
	if reg.IncarnationID == metadata.ZeroUuid {
		return fmt.Errorf("%w: Broker %d registration has no incarnation id", kerr.InvalidRegistration, reg.BrokerID)
	}
	names := map[string]bool{}
	for _, ep := range reg.Endpoints {
		if names[ep.Name] {
			return fmt.Errorf("%w: Broker %d registration lists listener %s twice", kerr.InvalidRegistration, reg.BrokerID, ep.Name)
		}
		names[ep.Name] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.log.Image()
	reg.BrokerEpoch = img.Offset() + 1
	if old, ok := img.Broker(reg.BrokerID); ok && reg.BrokerEpoch <= old.Epoch {
		reg.BrokerEpoch = old.Epoch + 1
	}
	reg.Endpoints = slices.Clone(reg.Endpoints)
	if _, err := c.log.Commit(ctx, []metadata.Record{&reg}); err != nil {
		return err
	}
	c.logger.Info("registered broker", "broker", reg.BrokerID, "epoch", reg.BrokerEpoch, "incarnation", reg.IncarnationID)
	return nil
}

// AllocateProducerIDs hands brokerID a block of count producer ids (count <=
// 0 means ProducerIDBlockSize) and returns the first; the block is
// [first, first+count).
func (c *Controller) AllocateProducerIDs(ctx context.Context, brokerID int32, count int) (int64, error) {
	if count <= 0 {
		count = ProducerIDBlockSize
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.log.Image()
	first := img.NextProducerID()
	if first > math.MaxInt64-int64(count) {
		return 0, fmt.Errorf("%w: Exhausted all producerIds as the next block's end producerId has exceeded the int64 type limit", kerr.UnknownServerError)
	}
	epoch := int64(-1)
	if b, ok := img.Broker(brokerID); ok {
		epoch = b.Epoch
	}
	rec := &metadata.ProducerIDsRecord{BrokerID: brokerID, BrokerEpoch: epoch, NextProducerID: first + int64(count)}
	if _, err := c.log.Commit(ctx, []metadata.Record{rec}); err != nil {
		return 0, err
	}
	return first, nil
}

// EnsureClusterID commits id as the cluster's id unless the image already
// has one, and returns the cluster's id. The first active controller calls
// it, so every node of a cluster reports one id.
func (c *Controller) EnsureClusterID(ctx context.Context, id string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if existing := c.log.Image().ClusterID(); existing != "" {
		return existing, nil
	}
	recs := []metadata.Record{&metadata.ClusterIDRecord{ClusterID: id}}
	if c.cfg.BootstrapRecords != nil {
		boot, err := c.cfg.BootstrapRecords()
		if err != nil {
			return "", err
		}
		recs = append(recs, boot...)
	}
	if _, err := c.log.Commit(ctx, recs); err != nil {
		return "", err
	}
	return id, nil
}

// ConfigChange sets (Value != nil) or deletes (Value == nil) one dynamic
// config of a resource.
type ConfigChange struct {
	ResourceType int8
	ResourceName string
	Name         string
	Value        *string
}

// AlterConfigs applies changes to one resource (the caller groups a request
// per resource; changes naming different resources are rejected). The
// complete resulting override set is passed to the validation hook. Changes
// that do not change the stored value write no record, as in Kafka.
func (c *Controller) AlterConfigs(ctx context.Context, changes []ConfigChange, validateOnly bool) error {
	if len(changes) == 0 {
		return nil
	}
	typ, name := changes[0].ResourceType, changes[0].ResourceName
	for _, ch := range changes[1:] {
		if ch.ResourceType != typ || ch.ResourceName != name {
			return fmt.Errorf("%w: AlterConfigs changes must address a single resource", kerr.InvalidRequest)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.log.Image()
	var current map[string]string
	switch typ {
	case metadata.ConfigResourceTopic:
		if _, ok := img.Topic(name); !ok {
			return fmt.Errorf("%w: The topic '%s' does not exist.", kerr.UnknownTopicOrPartition, name)
		}
		current = img.TopicConfig(name)
	case metadata.ConfigResourceBroker:
		if name != "" {
			if id, err := strconv.ParseInt(name, 10, 32); err != nil || id < 0 {
				return fmt.Errorf("%w: Invalid broker name %s", kerr.InvalidRequest, name)
			}
		}
		current = img.BrokerConfig(name)
	case metadata.ConfigResourceGroup:
		// Kafka allows configuring a group that does not exist yet; only
		// an empty name is refused.
		if name == "" {
			return fmt.Errorf("%w: Group name can't be empty", kerr.InvalidRequest)
		}
		current = img.GroupConfig(name)
	default:
		return fmt.Errorf("%w: Unsupported config resource type %d", kerr.InvalidRequest, typ)
	}
	var recs []metadata.Record
	for _, ch := range changes {
		if ch.Name == "" {
			return fmt.Errorf("%w: Config name must not be empty", kerr.InvalidConfig)
		}
		old, had := current[ch.Name]
		switch {
		case ch.Value == nil && !had, ch.Value != nil && had && old == *ch.Value:
			continue // no-op
		case ch.Value == nil:
			delete(current, ch.Name)
		default:
			current[ch.Name] = *ch.Value
		}
		var v *string
		if ch.Value != nil {
			v = metadata.StringPtr(*ch.Value)
		}
		recs = append(recs, &metadata.ConfigRecord{ResourceType: typ, ResourceName: name, Name: ch.Name, Value: v})
	}
	var err error
	switch {
	case typ == metadata.ConfigResourceTopic:
		err = c.validateTopicConfigs(current)
		if err == nil && c.cfg.ValidateTopicChange != nil {
			err = asConfigError(c.cfg.ValidateTopicChange(img.TopicConfig(name), current))
		}
	case typ == metadata.ConfigResourceGroup:
		if c.cfg.ValidateGroupConfigs != nil {
			err = asConfigError(c.cfg.ValidateGroupConfigs(current))
		}
	case c.cfg.ValidateBrokerConfigs != nil:
		err = asConfigError(c.cfg.ValidateBrokerConfigs(name, current))
	}
	if err != nil || validateOnly || len(recs) == 0 {
		return err
	}
	_, err = c.log.Commit(ctx, recs)
	return err
}

func (c *Controller) validateTopicConfigs(cfg map[string]string) error {
	if c.cfg.ValidateTopicConfigs == nil {
		return nil
	}
	return asConfigError(c.cfg.ValidateTopicConfigs(cfg))
}

// asConfigError makes a validation hook's error a Kafka error: one already
// wrapping a kerr code keeps it, anything else becomes INVALID_CONFIG.
func asConfigError(err error) error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return err
	}
	return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
}
