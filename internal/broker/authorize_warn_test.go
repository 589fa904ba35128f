package broker

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/security"
)

// TestControllerExposureWarning: with an authorizer on, the start-up
// warning names what the controller listener leaves unauthenticated:
// broker registration and heartbeat and raft traffic over PLAINTEXT, and
// raft traffic over TLS without required client certificates.
func TestControllerExposureWarning(t *testing.T) {
	for _, c := range []struct {
		name   string
		props  map[string]string
		supers []security.Principal
		want   []string // each in one warning
		none   bool
	}{
		{name: "PLAINTEXT, ANONYMOUS not allowed", props: map[string]string{},
			want: []string{"broker registrations and heartbeats", "raft quorum's replication are unauthenticated", "User:ANONYMOUS needs CLUSTER_ACTION"}},
		{name: "PLAINTEXT, ANONYMOUS a super user", props: map[string]string{}, supers: []security.Principal{security.Anonymous},
			want: []string{"broker registrations and heartbeats", "anyone who reaches the port may register, fence or shut down brokers"}},
		{name: "SASL_PLAINTEXT", props: map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"},
			want: []string{"raft quorum's replication is unauthenticated"}},
		{name: "SASL_SSL without client certificates", props: map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL",
			"ssl.client.auth": "required"}, // broker-wide: not the SASL_SSL listener's (KIP-684)
			want: []string{"raft connections are authenticated only by a TLS client certificate", "listener.name.controller.ssl.client.auth=required"}},
		{name: "SASL_SSL with client certificates", props: map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL",
			"listener.name.controller.ssl.client.auth": "required"}, none: true},
		{name: "SSL with client certificates", props: map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
			"ssl.client.auth": "required"}, none: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			props := map[string]string{
				"process.roles":                  "broker,controller",
				"node.id":                        "1",
				"listeners":                      "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093",
				"controller.listener.names":      "CONTROLLER",
				"controller.quorum.voters":       "1@127.0.0.1:19093",
				"log.dirs":                       t.TempDir(),
				"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
			}
			for k, v := range c.props {
				props[k] = v
			}
			cfg, _, err := config.ParseBroker(props)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			warnControllerExposure(Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(&buf, nil))}, c.supers)
			out := buf.String()
			if c.none {
				if out != "" {
					t.Fatalf("warned: %s", out)
				}
				return
			}
			if strings.Count(out, "level=WARN") != 1 {
				t.Fatalf("want one warning, got:\n%s", out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("warning lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
