package broker

// IncrementalAlterConfigs (key 44), v0-v1.
//
// Each config names an operation: SET (0), DELETE (1, back to the
// inherited value), APPEND (2) and SUBTRACT (3), the last two for list
// configs only (INVALID_CONFIG otherwise), starting from the effective
// value when the config is not overridden, as Kafka does. A key named twice
// in one resource is INVALID_REQUEST. The result is validated as a whole
// and committed as the difference (see replaceConfigs).

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.IncrementalAlterConfigs, 0, 1, (*Broker).handleIncrementalAlterConfigs) }

const (
	opSet      = 0
	opDelete   = 1
	opAppend   = 2
	opSubtract = 3
)

// handleIncrementalAlterConfigs refuses a broker resource of this node whose TLS stores would
// not load before anything is forwarded (dynamic_tls.go).
func (b *Broker) handleIncrementalAlterConfigs(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	return b.handleFiltered(ctx, r, (*Broker).incrementalAlterConfigs, filterListenerTLS)
}

func (b *Broker) incrementalAlterConfigs(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	if resp, ok := b.splitLoggerResources(ctx, r); ok { // broker_logger.go
		return resp, nil
	}
	if fwd, ok := b.forwardToController(ctx, r); ok {
		return fwd, nil
	}
	req := r.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType = rr.ResourceType
		sr.ResourceName = rr.ResourceName
		err := b.incrementalAlter(ctx, rr, req.ValidateOnly)
		sr.ErrorCode = b.errCode(err)
		if err != nil {
			sr.ErrorMessage = errMessage(err)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

func (b *Broker) incrementalAlter(ctx context.Context, rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	if rr.ResourceType == resourceBrokerLogger {
		return b.alterBrokerLoggers(rr, validateOnly)
	}
	next, err := b.incrementalNext(rr)
	if err != nil {
		return err
	}
	return b.replaceConfigs(ctx, int8(rr.ResourceType), rr.ResourceName, next, validateOnly)
}

// incrementalNext is a resource's overrides after the request's operations.
func (b *Broker) incrementalNext(rr kmsg.IncrementalAlterConfigsRequestResource) (map[string]string, error) {
	img := b.meta.Image()
	next, err := b.currentConfigs(img, int8(rr.ResourceType), rr.ResourceName)
	if err != nil {
		return nil, err
	}
	if next == nil {
		next = make(map[string]string)
	}
	seen := make(map[string]bool)
	for _, c := range rr.Configs {
		if seen[c.Name] {
			return nil, fmt.Errorf("%w: config %s is given more than once", kerr.InvalidRequest, c.Name)
		}
		seen[c.Name] = true
		switch c.Op {
		case opSet:
			if c.Value == nil {
				return nil, fmt.Errorf("%w: null value for config %s", kerr.InvalidRequest, c.Name)
			}
			next[c.Name] = *c.Value
		case opDelete:
			delete(next, c.Name)
		case opAppend, opSubtract:
			def, ok := b.configDef(int8(rr.ResourceType), c.Name)
			if !ok || def.Type != config.List {
				return nil, fmt.Errorf("%w: config %s is not a list, so it cannot be appended to or subtracted from", kerr.InvalidConfig, c.Name)
			}
			cur, ok := next[c.Name]
			if !ok {
				cur = b.effectiveValue(int8(rr.ResourceType), rr.ResourceName, c.Name)
			}
			items := splitList(cur)
			var given []string
			if c.Value != nil {
				given = splitList(*c.Value)
			}
			for _, v := range given {
				has := slices.Contains(items, v)
				if c.Op == opAppend && !has {
					items = append(items, v)
				}
				if c.Op == opSubtract && has {
					items = slices.DeleteFunc(items, func(s string) bool { return s == v })
				}
			}
			next[c.Name] = strings.Join(items, ",")
		default:
			return nil, fmt.Errorf("%w: unknown config operation %d", kerr.InvalidRequest, c.Op)
		}
	}
	return next, nil
}

func (b *Broker) configDef(typ int8, name string) (config.Def, bool) {
	defs := config.TopicDefs()
	switch typ {
	case resourceBroker:
		defs = config.BrokerDefs()
	case resourceGroup:
		defs = config.GroupDefs()
	}
	for _, d := range defs {
		if d.Name == name {
			return d, true
		}
	}
	return config.Def{}, false
}

func (b *Broker) effectiveValue(typ int8, name, key string) string {
	entries, err := b.describeResource(b.meta.Image(), typ, name)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if e.Name == key {
			return e.Value
		}
	}
	return ""
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
