package broker

// DescribeConfigs (key 32), v0-v4.
//
// Topic resources describe every topic config with its effective value and
// source (a topic override, a dynamic broker default, a static broker
// setting or Kafka's default); broker resources (named by this broker's id,
// or "" for the cluster-wide dynamic defaults) describe the broker configs.
// v1+ adds sources and, when asked, synonyms in precedence order; v3+ adds
// types and, when asked, documentation. Sensitive values are returned as
// null. Group resources (type 32, KIP-848) describe the consumer group
// configs: GROUP_CONFIG when the group overrides a key, else DEFAULT_CONFIG
// with the broker's group.consumer.* value; the group need not exist.
// Broker loggers (resource type 8) are not served: INVALID_REQUEST.

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.DescribeConfigs, 0, 4, (*Broker).handleDescribeConfigs) }

// Kafka's ConfigResource types.
const (
	resourceTopic        = 2
	resourceBroker       = 4
	resourceBrokerLogger = 8
	resourceGroup        = 32
)

func (b *Broker) handleDescribeConfigs(_ context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	img := b.meta.Image()
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType = rr.ResourceType
		sr.ResourceName = rr.ResourceName
		entries, err := b.describeResource(img, int8(rr.ResourceType), rr.ResourceName)
		if err != nil {
			sr.ErrorCode = b.errCode(err)
			sr.ErrorMessage = errMessage(err)
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		var wanted map[string]bool
		if rr.ConfigNames != nil {
			wanted = make(map[string]bool, len(rr.ConfigNames))
			for _, n := range rr.ConfigNames {
				wanted[n] = true
			}
		}
		for _, e := range entries {
			if wanted != nil && !wanted[e.Name] {
				continue
			}
			sr.Configs = append(sr.Configs, describeEntry(e, r.Version, req.IncludeSynonyms, req.IncludeDocumentation))
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

func (b *Broker) describeResource(img *metadata.Image, typ int8, name string) ([]config.Entry, error) {
	switch typ {
	case resourceTopic:
		if _, ok := img.Topic(name); !ok {
			return nil, kerr.UnknownTopicOrPartition
		}
		return config.DescribeTopic(b.cfg, b.dynamicBrokerConfig(img), img.TopicConfig(name)), nil
	case resourceBroker:
		if err := b.checkBrokerResource(name); err != nil {
			return nil, err
		}
		perBroker := img.BrokerConfig(strconv.Itoa(int(b.nodeID)))
		if name == "" {
			perBroker = nil
		}
		return config.DescribeBroker(b.cfg, perBroker, img.BrokerConfig("")), nil
	case resourceGroup:
		if err := checkGroupResourceName(name); err != nil {
			return nil, err
		}
		return config.DescribeGroup(b.cfg, img.GroupConfig(name)), nil
	case resourceBrokerLogger:
		return b.describeBrokerLoggers(name) // broker_logger.go
	default:
		return nil, fmt.Errorf("%w: unsupported resource type %d", kerr.InvalidRequest, typ)
	}
}

// checkBrokerResourceName accepts "" (cluster-wide defaults) or a broker id.
func checkBrokerResourceName(name string) error {
	if name == "" {
		return nil
	}
	if id, err := strconv.ParseInt(name, 10, 32); err != nil || id < 0 {
		return fmt.Errorf("%w: broker resource name %q is not a broker id", kerr.InvalidRequest, name)
	}
	return nil
}

// checkGroupResourceName refuses an empty group id, as Kafka's
// ConfigHelper and ControllerConfigurationValidator do.
func checkGroupResourceName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: Group name can't be empty", kerr.InvalidRequest)
	}
	return nil
}

// checkBrokerResource accepts "" (cluster-wide defaults) or this broker's id:
// a broker describes only its own configs, as Kafka's.
func (b *Broker) checkBrokerResource(name string) error {
	if err := checkBrokerResourceName(name); err != nil || name == "" {
		return err
	}
	id, _ := strconv.ParseInt(name, 10, 32)
	if int32(id) != b.nodeID {
		return fmt.Errorf("%w: broker %d is not this broker (%d)", kerr.InvalidRequest, id, b.nodeID)
	}
	return nil
}

func describeEntry(e config.Entry, version int16, synonyms, docs bool) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = e.Name
	if e.HasValue && !e.Sensitive {
		v := e.Value
		c.Value = &v
	}
	c.ReadOnly = e.ReadOnly
	c.IsDefault = e.Source == config.SourceDefaultConfig
	c.Source = kmsg.ConfigSource(e.Source)
	if version == 0 {
		c.Source = -1
	}
	c.IsSensitive = e.Sensitive
	if synonyms && version >= 1 {
		for _, s := range e.Synonyms {
			cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			cs.Name = s.Name
			if s.HasValue && !e.Sensitive {
				v := s.Value
				cs.Value = &v
			}
			cs.Source = kmsg.ConfigSource(s.Source)
			c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
		}
	}
	if version >= 3 {
		c.ConfigType = kmsg.ConfigType(e.Type)
		if docs {
			d := e.Doc
			c.Documentation = &d
		}
	}
	return c
}

// dynamicBrokerConfig merges the cluster-wide dynamic broker defaults with
// this broker's dynamic overrides, which win.
func (b *Broker) dynamicBrokerConfig(img *metadata.Image) map[string]string {
	merged := maps.Clone(img.BrokerConfig(""))
	if merged == nil {
		merged = make(map[string]string)
	}
	maps.Copy(merged, img.BrokerConfig(strconv.Itoa(int(b.nodeID))))
	return merged
}
