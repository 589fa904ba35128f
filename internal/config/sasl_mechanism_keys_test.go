package config

import (
	"strings"
	"testing"
)

// TestSASLMechanismKeysPerListener: the OAUTHBEARER and GSSAPI keys are
// taken in their listener- and mechanism-prefixed forms, as Kafka reads
// them, and validated there too.
func TestSASLMechanismKeysPerListener(t *testing.T) {
	for _, k := range []string{
		"listener.name.client.oauthbearer.sasl.oauthbearer.jwks.endpoint.url",
		"listener.name.client.oauthbearer.sasl.oauthbearer.expected.audience",
		"listener.name.client.sasl.oauthbearer.expected.issuer",
		"listener.name.client.gssapi.sasl.kerberos.service.name",
		"listener.name.client.gssapi.sasl.kerberos.principal.to.local.rules",
		"sasl.oauthbearer.sub.claim.name",
	} {
		if _, _, err := ParseBroker(map[string]string{k: "x"}); err != nil {
			t.Errorf("%s=x refused: %v", k, err)
		}
	}
	ok := map[string]string{"listener.name.client.oauthbearer.sasl.server.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"}
	if _, _, err := ParseBroker(ok); err != nil {
		t.Errorf("the KIP-768 validator class refused: %v", err)
	}
	for k, v := range map[string]string{
		"listener.name.client.oauthbearer.sasl.oauthbearer.clock.skew.seconds": "-1",
		"sasl.oauthbearer.jwks.endpoint.refresh.ms":                            "soon",
		"sasl.kerberos.kinit.cmd":                                              "/opt/kinit",
	} {
		_, _, err := ParseBroker(map[string]string{k: v})
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v, want a refusal naming the key", k, v, err)
		}
	}
}
