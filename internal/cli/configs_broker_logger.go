package cli

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Broker-logger configs (kafka-configs.sh --entity-type broker-loggers):
// resource type BROKER_LOGGER, sent to the broker itself, which answers
// for its own loggers.

func describeBrokerLoggers(ctx context.Context, cl *kgo.Client, broker int32) (kadm.ResourceConfigs, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, fmt.Sprint(broker)
	req.Resources = append(req.Resources, rr)
	kresp, err := cl.Broker(int(broker)).Request(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := kresp.(*kmsg.DescribeConfigsResponse)
	var out kadm.ResourceConfigs
	for _, r := range resp.Resources {
		rc := kadm.ResourceConfig{Name: r.ResourceName, Err: kerr.ErrorForCode(r.ErrorCode)}
		if r.ErrorMessage != nil {
			rc.ErrMessage = *r.ErrorMessage
		}
		for _, c := range r.Configs {
			rc.Configs = append(rc.Configs, kadm.Config{Key: c.Name, Value: c.Value, Source: c.Source})
		}
		out = append(out, rc)
	}
	return out, nil
}

func alterBrokerLoggers(ctx context.Context, cl *kgo.Client, alters []kadm.AlterConfig, broker int32) (kadm.AlterConfigsResponses, error) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, fmt.Sprint(broker)
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
	kresp, err := cl.Broker(int(broker)).Request(ctx, req)
	if err != nil {
		return nil, err
	}
	var out kadm.AlterConfigsResponses
	for _, r := range kresp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
		ar := kadm.AlterConfigsResponse{Name: r.ResourceName, Err: kerr.ErrorForCode(r.ErrorCode)}
		if r.ErrorMessage != nil {
			ar.ErrMessage = *r.ErrorMessage
		}
		out = append(out, ar)
	}
	return out, nil
}
