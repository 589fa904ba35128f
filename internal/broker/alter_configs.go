package broker

// AlterConfigs (key 33), v0-v2.
//
// The legacy form: the configs given replace the resource's whole set of
// overrides (a topic's dynamic configs, or a broker's dynamic configs; ""
// names the cluster-wide broker defaults; or a consumer group's configs,
// KIP-848, validated against the group.consumer.* bounds as Kafka's
// GroupConfig.validate does, the group not needing to exist). Values are
// validated as Kafka
// validates them (INVALID_CONFIG); unknown topics are
// UNKNOWN_TOPIC_OR_PARTITION. A key named twice takes its last value, as
// Kafka builds the new set by putting each entry in turn
// (ConfigurationControlManager.legacyAlterConfigs); IncrementalAlterConfigs,
// by contrast, refuses duplicates. validate_only changes nothing.

import (
	"context"
	"fmt"
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.AlterConfigs, 0, 2, (*Broker).handleAlterConfigs) }

// handleAlterConfigs refuses a broker resource of this node whose TLS stores would
// not load before anything is forwarded (dynamic_tls.go).
func (b *Broker) handleAlterConfigs(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	return b.handleFiltered(ctx, r, (*Broker).alterConfigs, filterListenerTLS)
}

func (b *Broker) alterConfigs(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	if fwd, ok := b.forwardToController(ctx, r); ok {
		return fwd, nil
	}
	req := r.Body.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType = rr.ResourceType
		sr.ResourceName = rr.ResourceName
		err := func() error {
			next := make(map[string]string, len(rr.Configs))
			for _, c := range rr.Configs {
				if c.Value == nil {
					return fmt.Errorf("%w: null value for config %s", kerr.InvalidRequest, c.Name)
				}
				next[c.Name] = *c.Value
			}
			return b.replaceConfigs(ctx, int8(rr.ResourceType), rr.ResourceName, next, req.ValidateOnly)
		}()
		sr.ErrorCode = b.errCode(err)
		if err != nil {
			sr.ErrorMessage = errMessage(err)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

// currentConfigs returns a resource's present overrides, checking that the
// resource exists and may be altered.
func (b *Broker) currentConfigs(img *metadata.Image, typ int8, name string) (map[string]string, error) {
	switch typ {
	case resourceTopic:
		if _, ok := img.Topic(name); !ok {
			return nil, kerr.UnknownTopicOrPartition
		}
		return maps.Clone(img.TopicConfig(name)), nil
	case resourceBroker:
		// The controller (where alterations land, forwarded) stores any
		// broker's overrides, as Kafka's ConfigurationControlManager does;
		// each broker applies its own.
		if err := checkBrokerResourceName(name); err != nil {
			return nil, err
		}
		return maps.Clone(img.BrokerConfig(name)), nil
	case resourceGroup:
		if err := checkGroupResourceName(name); err != nil {
			return nil, err
		}
		return maps.Clone(img.GroupConfig(name)), nil
	default:
		return nil, fmt.Errorf("%w: unsupported resource type %d", kerr.InvalidRequest, typ)
	}
}

// replaceConfigs validates a resource's complete new set of overrides and
// commits the difference from the current set.
func (b *Broker) replaceConfigs(ctx context.Context, typ int8, name string, next map[string]string, validateOnly bool) error {
	img := b.meta.Image()
	cur, err := b.currentConfigs(img, typ, name)
	if err != nil {
		return err
	}
	var changes []rules.ConfigChange
	changed := make(map[string]string)
	for k, v := range next {
		if old, ok := cur[k]; !ok || old != v {
			v := v
			changes = append(changes, rules.ConfigChange{ResourceType: typ, ResourceName: name, Name: k, Value: &v})
			changed[k] = v
		}
	}
	for k := range cur {
		if _, ok := next[k]; !ok {
			changes = append(changes, rules.ConfigChange{ResourceType: typ, ResourceName: name, Name: k})
		}
	}
	switch typ {
	case resourceTopic:
		if err := config.ValidateTopicConfigsFor(b.cfg, next); err != nil {
			return err
		}
		if err := config.ValidateTopicChange(cur, next); err != nil {
			return err
		}
		if _, err := config.ResolveTopic(b.cfg, b.dynamicBrokerConfig(img), next); err != nil {
			return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
		}
	case resourceBroker:
		validate := config.ValidateBrokerDynamic
		if name == "" {
			validate = config.ValidateBrokerDynamicDefault
		}
		if err := validate(changed); err != nil {
			return err
		}
	case resourceGroup:
		if err := config.ValidateGroupConfigs(b.cfg, next); err != nil {
			return err
		}
	}
	if len(changes) == 0 {
		return nil
	}
	if err := b.controller.AlterConfigs(ctx, changes, validateOnly); err != nil {
		return err
	}
	b.awaitMetadata(ctx)
	return nil
}
