package config

import (
	"sort"
	"strings"
)

// ConnectPrefix is the prefix of the embedded Connect worker's settings: a
// Kafka Connect worker key (connect-distributed.properties) with "connect."
// in front, e.g. connect.listeners, connect.group.id,
// connect.value.converter.schemas.enable. Kafka's own connect.protocol is
// connect.connect.protocol.
const ConnectPrefix = "connect."

// Connect keys: the embedded Connect worker's switch; its worker settings
// are the connect.* keys (ConnectWorker).
var connectDefs = []Def{
	def("connect.enable", Boolean, "false", "Run a Kafka Connect worker in this node, in distributed mode, a client of this node's first PLAINTEXT listener, with its REST API at connect.listeners (default http://127.0.0.1:8083). Every other connect.<key> setting is the worker setting <key> (Kafka Connect's worker config names, validated as `vltava connect distributed` validates them; see docs/CONNECT.md), with these defaults: group.id=connect-cluster, config.storage.topic=connect-configs, offset.storage.topic=connect-offsets, status.storage.topic=connect-status, their replication factors -1 (the broker's default.replication.factor). A connect.* setting with connect.enable=false is refused.", vltavaOnly()),
}

// fillConnect sets the embedded worker's fields from the parsed keys.
func (b *Broker) fillConnect(str func(string) string) error {
	b.ConnectEnable = parseBool(str("connect.enable"))
	b.ConnectWorker = map[string]string{}
	for k, v := range b.Raw {
		if rest, ok := strings.CutPrefix(k, ConnectPrefix); ok && k != "connect.enable" {
			b.ConnectWorker[rest] = v
		}
	}
	if !b.ConnectEnable && len(b.ConnectWorker) > 0 {
		keys := make([]string, 0, len(b.ConnectWorker))
		for k := range b.ConnectWorker {
			keys = append(keys, ConnectPrefix+k)
		}
		sort.Strings(keys)
		return b.invalid(keys[0], "a setting of the embedded Connect worker, which runs only with connect.enable=true")
	}
	return nil
}

// isConnectWorkerKey reports whether name is one of the embedded worker's
// connect.<key> settings, which the worker validates when it starts.
func isConnectWorkerKey(name string) bool {
	return strings.HasPrefix(name, ConnectPrefix) && name != "connect.enable" && len(name) > len(ConnectPrefix)
}
