package broker

import (
	"testing"

	"github.com/vltava/vltava/internal/config"
)

// TestInterBrokerListenerRule: the inter-broker listener is the one
// follower fetchers pick from a broker's registration: the advertised
// listener named by inter.broker.listener.name (or
// security.inter.broker.protocol), else the first advertised one.
func TestInterBrokerListenerRule(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"zero config", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0"}, "PLAINTEXT"},
		{"named", map[string]string{
			"listeners":                      "CLIENT://127.0.0.1:0,REPLICATION://127.0.0.1:0",
			"listener.security.protocol.map": "CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT",
			"inter.broker.listener.name":     "REPLICATION",
		}, "REPLICATION"},
		{"by security protocol", map[string]string{
			"listeners":                      "CLIENT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
			"listener.security.protocol.map": "CLIENT:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		}, "PLAINTEXT"},
		{"none matches: the first advertised", map[string]string{
			"listeners":                      "EXTERNAL://127.0.0.1:0,INTERNAL://127.0.0.1:0",
			"listener.security.protocol.map": "EXTERNAL:PLAINTEXT,INTERNAL:PLAINTEXT",
		}, "EXTERNAL"},
		{"advertised order decides", map[string]string{
			"listeners":                      "EXTERNAL://127.0.0.1:0,INTERNAL://127.0.0.1:0",
			"advertised.listeners":           "INTERNAL://127.0.0.1:9093,EXTERNAL://127.0.0.1:9092",
			"listener.security.protocol.map": "EXTERNAL:PLAINTEXT,INTERNAL:PLAINTEXT",
		}, "INTERNAL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props := map[string]string{"node.id": "1", "log.dirs": t.TempDir()}
			for k, v := range tc.props {
				props[k] = v
			}
			cfg, _, err := config.ParseBroker(props)
			if err != nil {
				t.Fatalf("config: %v", err)
			}
			if got := interBrokerListener(cfg); got != tc.want {
				t.Errorf("inter-broker listener %q, want %q", got, tc.want)
			}
		})
	}
}
