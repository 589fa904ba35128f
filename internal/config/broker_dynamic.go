package config

import (
	"strconv"
	"strings"
)

// Broker settings Vltava applies at run time: their effective values come
// from the static config with the dynamic broker configs (AlterConfigs on
// this broker, then on the cluster default) layered over it, as Kafka's
// DynamicBrokerConfig does.

// ConnectionQuotas are max.connections, its per-listener form,
// max.connections.per.ip, its overrides and max.connection.creation.rate.
type ConnectionQuotas struct {
	Max, PerIP, CreationRate int32
	PerIPOverrides           map[string]int32
	// PerListener is listener.name.<listener>.max.connections by listener
	// name (upper case, as in Listeners), for the listeners that set it;
	// nil when none does.
	PerListener map[string]int32
}

// ConnectionQuotas returns the connection quotas in effect on this broker:
// the per-broker dynamic configs, then the cluster-wide dynamic defaults,
// then the static config (Kafka applies them to the acceptors at run time).
// A listener's listener.name.<listener>.max.connections, in any of those
// layers, is its own limit; Kafka's ListenerConnectionQuota reads it the
// same way (valuesWithPrefixOverride), the prefixed key over the
// unprefixed one.
func (b *Broker) ConnectionQuotas(dynamicPerBroker, dynamicDefault map[string]string) ConnectionQuotas {
	merged := mergeLayers(b.Raw, dynamicDefault, dynamicPerBroker)
	num := func(key string) int32 { return int32(layeredCount(merged, key, 32)) }
	q := ConnectionQuotas{Max: num("max.connections"), PerIP: num("max.connections.per.ip"), CreationRate: num("max.connection.creation.rate")}
	if v, ok := merged["max.connections.per.ip.overrides"]; ok && validateConnectionOverrides(v) == "" {
		q.PerIPOverrides = parseConnectionOverrides(v)
	}
	names := make([]string, 0, len(b.Listeners)+1)
	for _, l := range b.Listeners {
		names = append(names, l.Name)
	}
	// The controller listener, which a node of a single-node quorum has
	// without listing it (its quorum port, named CONTROLLER).
	if len(b.ControllerListenerNames) == 0 {
		names = append(names, "CONTROLLER")
	}
	for _, name := range names {
		if _, dup := q.PerListener[name]; dup {
			continue
		}
		v, ok := b.ListenerPrefixed(name, "max.connections", dynamicDefault, dynamicPerBroker)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			continue // validated when set; never a limit of its own
		}
		if q.PerListener == nil {
			q.PerListener = map[string]int32{}
		}
		q.PerListener[name] = int32(n)
	}
	return q
}

// ReplicationThrottledRates returns leader.replication.throttled.rate and
// follower.replication.throttled.rate in effect on this broker: the
// per-broker dynamic config, then the cluster-wide dynamic default, then
// the static config.
func (b *Broker) ReplicationThrottledRates(dynamicPerBroker, dynamicDefault map[string]string) (leader, follower int64) {
	merged := mergeLayers(b.Raw, dynamicDefault, dynamicPerBroker)
	return layeredCount(merged, "leader.replication.throttled.rate", 64), layeredCount(merged, "follower.replication.throttled.rate", 64)
}

// RemoteLogQuotaRates returns remote.log.manager.copy.max.bytes.per.second
// and remote.log.manager.fetch.max.bytes.per.second (KIP-956) in effect on
// this broker: the per-broker dynamic config, then the cluster-wide dynamic
// default, then the static config.
func (b *Broker) RemoteLogQuotaRates(dynamicPerBroker, dynamicDefault map[string]string) (copyRate, fetchRate int64) {
	merged := mergeLayers(b.Raw, dynamicDefault, dynamicPerBroker)
	positive := func(key string) int64 {
		if n := layeredCount(merged, key, 64); n > 0 {
			return n
		}
		return parseInt(brokerDefs[key].Default)
	}
	return positive("remote.log.manager.copy.max.bytes.per.second"), positive("remote.log.manager.fetch.max.bytes.per.second")
}

// layeredCount is a non-negative integer key of merged layers, of bitSize
// bits, or the key's default when it is unset or not such a number.
func layeredCount(merged map[string]string, key string, bitSize int) int64 {
	if v, ok := merged[key]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, bitSize); err == nil && n >= 0 {
			return n
		}
	}
	return parseInt(brokerDefs[key].Default)
}

// parseConnectionOverrides reads max.connections.per.ip.overrides, already
// validated: host:count pairs separated by commas.
func parseConnectionOverrides(v string) map[string]int32 {
	out := map[string]int32{}
	for _, item := range splitList(v) {
		i := strings.LastIndex(item, ":")
		out[strings.TrimSpace(item[:i])] = int32(parseInt(item[i+1:]))
	}
	return out
}

// validateConnectionOverrides checks host:count pairs, as Kafka's
// getMap-based parsing of max.connections.per.ip.overrides does.
func validateConnectionOverrides(v string) string {
	for _, item := range splitList(v) {
		i := strings.LastIndex(item, ":")
		if i <= 0 {
			return "must be a comma-separated list of host:count pairs"
		}
		n, err := strconv.ParseInt(strings.TrimSpace(item[i+1:]), 10, 32)
		if err != nil || n < 0 {
			return "must be a comma-separated list of host:count pairs with counts >= 0"
		}
	}
	return ""
}
