package broker

// A dynamic update of this node's TLS listener stores (ssl.keystore.*,
// ssl.truststore.*, listener.name.<l>.ssl.* on the BROKER resource naming
// this node) is validated where the stores are, before it is forwarded:
// the stores the update would give are loaded and, if they do not load
// or their certificate changes its subject or SANs (KIP-978, unless
// ssl.allow.dn.changes / ssl.allow.san.changes), the resource is answered
// INVALID_CONFIG with the reason and nothing is committed, so the stores
// in force stay, as Kafka's validation of a reconfigurable SSL factory
// refuses such an update.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
)

// touchesTLS reports whether a config key is one of a listener's ssl.*
// settings, broker-wide or per listener.
func touchesTLS(key string) bool {
	if strings.HasPrefix(key, "ssl.") {
		return true
	}
	rest, ok := strings.CutPrefix(key, "listener.name.")
	if !ok {
		return false
	}
	_, k, ok := strings.Cut(rest, ".")
	return ok && strings.HasPrefix(k, "ssl.")
}

// ownBrokerResource reports whether a config resource is this node's
// BROKER resource.
func (b *Broker) ownBrokerResource(typ kmsg.ConfigResourceType, name string) bool {
	return int8(typ) == resourceBroker && name == strconv.Itoa(int(b.nodeID))
}

// tlsRefusal is the error for an update of this node's overrides to next,
// nil if its TLS listeners' stores load with it (or it changes none of
// their settings).
func (b *Broker) tlsRefusal(next map[string]string, keys []string) error {
	if b.checkTLS == nil || !slices.ContainsFunc(keys, touchesTLS) {
		return nil
	}
	if err := b.checkTLS(next); err != nil {
		return fmt.Errorf("%w: the TLS key and trust stores of this update do not load, so the ones in force stay: %v", kerr.InvalidConfig, err)
	}
	return nil
}

func filterListenerTLS(b *Broker, r *server.Request) (int, func(kmsg.Response)) {
	switch req := r.Body.(type) {
	case *kmsg.AlterConfigsRequest:
		var refused []kmsg.AlterConfigsResponseResource
		req.Resources = slices.DeleteFunc(slices.Clone(req.Resources), func(rr kmsg.AlterConfigsRequestResource) bool {
			if !b.ownBrokerResource(rr.ResourceType, rr.ResourceName) {
				return false
			}
			next := make(map[string]string, len(rr.Configs))
			keys := make([]string, 0, len(rr.Configs))
			for _, c := range rr.Configs {
				if c.Value == nil {
					return false // INVALID_REQUEST from the handler
				}
				next[c.Name] = *c.Value
				keys = append(keys, c.Name)
			}
			// The legacy form replaces the whole set: a key it drops
			// changes too.
			for k := range b.meta.Image().BrokerConfig(rr.ResourceName) {
				keys = append(keys, k)
			}
			err := b.tlsRefusal(next, keys)
			if err == nil {
				return false
			}
			sr := kmsg.NewAlterConfigsResponseResource()
			sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
			sr.ErrorCode, sr.ErrorMessage = b.errCode(err), errMessage(err)
			refused = append(refused, sr)
			return true
		})
		return len(req.Resources), func(resp kmsg.Response) {
			out := resp.(*kmsg.AlterConfigsResponse)
			out.Resources = append(out.Resources, refused...)
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		var refused []kmsg.IncrementalAlterConfigsResponseResource
		req.Resources = slices.DeleteFunc(slices.Clone(req.Resources), func(rr kmsg.IncrementalAlterConfigsRequestResource) bool {
			if !b.ownBrokerResource(rr.ResourceType, rr.ResourceName) {
				return false
			}
			next, err := b.incrementalNext(rr)
			if err != nil {
				return false // the handler answers it
			}
			keys := make([]string, 0, len(rr.Configs))
			for _, c := range rr.Configs {
				keys = append(keys, c.Name)
			}
			if err = b.tlsRefusal(next, keys); err == nil {
				return false
			}
			sr := kmsg.NewIncrementalAlterConfigsResponseResource()
			sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
			sr.ErrorCode, sr.ErrorMessage = b.errCode(err), errMessage(err)
			refused = append(refused, sr)
			return true
		})
		return len(req.Resources), func(resp kmsg.Response) {
			out := resp.(*kmsg.IncrementalAlterConfigsResponse)
			out.Resources = append(out.Resources, refused...)
		}
	}
	panic(fmt.Sprintf("filterListenerTLS: %T", r.Body))
}
