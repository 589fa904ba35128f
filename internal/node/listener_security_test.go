package node

import (
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/security/sasl/scram"
	"github.com/vltava/vltava/internal/testing/certs"
)

type noScram struct{}

func (noScram) ScramCredential(string, int8) (scram.Credential, bool) {
	return scram.Credential{}, false
}

// TestListenerSecurityRefusals: a listener that cannot be served as
// configured stops start-up with the listener and the reason.
func TestListenerSecurityRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"SSL without a key store", map[string]string{"listeners": "SSL://127.0.0.1:9093"}, "listener SSL (SSL): an SSL listener needs a key store"},
		{"SASL with Kafka's default mechanism", map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:9093"}, "GSSAPI: sasl.jaas.config must name com.sun.security.auth.module.Krb5LoginModule"},
		{"OAUTHBEARER without its login module", map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms": "OAUTHBEARER"}, "OAUTHBEARER: sasl.jaas.config must name org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"},
		{"unknown mechanism", map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms": "DIGEST-MD5"}, `unknown SASL mechanism "DIGEST-MD5"`},
		{"PLAIN without JAAS", map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms": "PLAIN"}, "PLAIN needs a JAAS configuration"},
		{"PLAIN with the wrong login module", map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms": "PLAIN",
			"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`}, "names login module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props := map[string]string{"inter.broker.listener.name": strings.SplitN(tc.props["listeners"], ":", 2)[0]}
			for k, v := range tc.props {
				props[k] = v
			}
			cfg, _, err := config.ParseBroker(props)
			if err != nil {
				t.Fatal(err)
			}
			_, err = buildListenerSecurity(cfg, noScram{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	// PLAIN per listener, SCRAM beside it: builds.
	cfg, _, err := config.ParseBroker(map[string]string{
		"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "inter.broker.listener.name": "SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":                                      "PLAIN,SCRAM-SHA-256",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config":          `org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";`,
		"listener.name.sasl_plaintext.connections.max.reauth.ms":       "3600000",
		"listener.name.sasl_plaintext.plain.connections.max.reauth.ms": "60000",
	})
	if err != nil {
		t.Fatal(err)
	}
	sec, err := buildListenerSecurity(cfg, noScram{})
	if err != nil {
		t.Fatal(err)
	}
	if got := sec["SASL_PLAINTEXT"].sasl.EnabledMechanisms(); strings.Join(got, ",") != "PLAIN,SCRAM-SHA-256" {
		t.Errorf("mechanisms %v", got)
	}
	if sc := sec["SASL_PLAINTEXT"].sasl; sc.MaxReauth != time.Hour || sc.MaxReauthByMechanism["PLAIN"] != time.Minute || len(sc.MaxReauthByMechanism) != 1 {
		t.Errorf("re-authentication: %v %v", sc.MaxReauth, sc.MaxReauthByMechanism)
	}
}

// TestSASLSSLClientAuthNeedsTheListenerPrefix (KIP-684): the broker-wide
// ssl.client.auth applies to SSL listeners, not to SASL_SSL ones unless set
// with their prefix.
func TestSASLSSLClientAuthNeedsTheListenerPrefix(t *testing.T) {
	dir := t.TempDir()
	ca := certs.NewCA(t, "ca")
	ks, _, _ := ca.Server(t).WritePEM(t, dir, "b", ca)
	base := map[string]string{
		"listeners": "SSL://127.0.0.1:9093,SASL_SSL://127.0.0.1:9094", "inter.broker.listener.name": "SSL",
		"ssl.keystore.type": "PEM", "ssl.keystore.location": ks, "ssl.client.auth": "required",
		"sasl.enabled.mechanisms": "SCRAM-SHA-256",
	}
	check := func(props map[string]string, want string) {
		t.Helper()
		cfg, _, err := config.ParseBroker(props)
		if err != nil {
			t.Fatal(err)
		}
		sec, err := buildListenerSecurity(cfg, noScram{})
		if err != nil {
			t.Fatal(err)
		}
		if got := sec["SSL"].tls.ClientAuth(); got != "required" {
			t.Errorf("SSL client auth %q", got)
		}
		if got := sec["SASL_SSL"].tls.ClientAuth(); got != want {
			t.Errorf("SASL_SSL client auth %q, want %q", got, want)
		}
	}
	check(base, "none")
	base["listener.name.sasl_ssl.ssl.client.auth"] = "requested"
	check(base, "requested")
}
