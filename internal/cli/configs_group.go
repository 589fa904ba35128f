package cli

// Group configs (KIP-848, resource type GROUP) through Kafka's own
// DescribeConfigs and IncrementalAlterConfigs requests: kadm serves topic
// and broker resources only.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeGroupConfigs(ctx context.Context, cl *kgo.Client, group string) (kadm.ResourceConfigs, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	var out kadm.ResourceConfigs
	for _, r := range resp.Resources {
		rc := kadm.ResourceConfig{Name: r.ResourceName, Err: kerr.ErrorForCode(r.ErrorCode)}
		if r.ErrorMessage != nil {
			rc.ErrMessage = *r.ErrorMessage
		}
		for _, c := range r.Configs {
			cfg := kadm.Config{Key: c.Name, Value: c.Value, Sensitive: c.IsSensitive, Source: c.Source}
			for _, s := range c.ConfigSynonyms {
				cfg.Synonyms = append(cfg.Synonyms, kadm.ConfigSynonym{Key: s.Name, Value: s.Value, Source: s.Source})
			}
			rc.Configs = append(rc.Configs, cfg)
		}
		out = append(out, rc)
	}
	return out, nil
}

func alterGroupConfigs(ctx context.Context, cl *kgo.Client, alters []kadm.AlterConfig, group string) (kadm.AlterConfigsResponses, error) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for _, a := range alters {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = a.Name, a.Value
		c.Op = kmsg.IncrementalAlterConfigOpSet
		if a.Op == kadm.DeleteConfig {
			c.Op = kmsg.IncrementalAlterConfigOpDelete
		}
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	var out kadm.AlterConfigsResponses
	for _, r := range resp.Resources {
		ar := kadm.AlterConfigsResponse{Name: r.ResourceName, Err: kerr.ErrorForCode(r.ErrorCode)}
		if r.ErrorMessage != nil {
			ar.ErrMessage = *r.ErrorMessage
		}
		out = append(out, ar)
	}
	return out, nil
}
