package config

import "strings"

// ListenerLookup resolves keys for one listener and (optionally) one SASL
// mechanism in Kafka's order: listener.name.<listener>.<mechanism>.<key>,
// then listener.name.<listener>.<key>, then <key>, and last the key's
// default (ok is false for a key unset without default). The listener and
// mechanism parts of the prefix are lower case, as Kafka writes them
// (listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config); upper-case
// spellings in the properties are found too. layers are dynamic configs
// (AlterConfigs) laid over the static ones, lowest first, as Kafka merges
// the cluster default and the per-broker dynamic configs over
// server.properties before its channel builders read them.
func (b *Broker) ListenerLookup(listener, mechanism string, layers ...map[string]string) func(key string) (string, bool) {
	prefix := "listener.name." + strings.ToLower(listener) + "."
	find := func(name string) (string, bool) {
		for i := len(layers) - 1; i >= 0; i-- {
			if v, ok := lookupFold(layers[i], name); ok {
				return v, true
			}
		}
		return lookupFold(b.Raw, name)
	}
	return func(key string) (string, bool) {
		if mechanism != "" {
			if v, ok := find(prefix + strings.ToLower(mechanism) + "." + key); ok {
				return v, true
			}
		}
		if v, ok := find(prefix + key); ok {
			return v, true
		}
		if v, ok := find(key); ok {
			return v, true
		}
		if d := brokerDefs[key]; d != nil {
			v, ok := b.defaultOf(d)
			return v, ok
		}
		return "", false
	}
}

// lookupFold finds name in props, its listener and mechanism parts in any
// case.
func lookupFold(props map[string]string, name string) (string, bool) {
	if v, ok := props[name]; ok {
		return strings.TrimSpace(v), true
	}
	if !strings.HasPrefix(name, "listener.name.") {
		return "", false
	}
	for k, v := range props {
		if strings.EqualFold(k, name) {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// ListenerPrefixed returns listener.name.<listener>.<key> only, without
// falling back to the broker-wide key (KIP-684: ssl.client.auth applies to
// a SASL_SSL listener only when set with its listener prefix).
func (b *Broker) ListenerPrefixed(listener, key string, layers ...map[string]string) (string, bool) {
	name := "listener.name." + strings.ToLower(listener) + "." + key
	for i := len(layers) - 1; i >= 0; i-- {
		if v, ok := lookupFold(layers[i], name); ok {
			return v, true
		}
	}
	return lookupFold(b.Raw, name)
}
