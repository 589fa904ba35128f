package clientauth

import (
	"strings"
	"testing"

	"github.com/vltava/vltava/internal/testing/certs"
)

func TestNew(t *testing.T) {
	ca := certs.NewCA(t, "ca")
	trust := string(ca.PEM)
	for _, tc := range []struct {
		props   map[string]string
		wantErr string
		check   func(*Security) bool
	}{
		{map[string]string{}, "", func(s *Security) bool { return s.Protocol == "PLAINTEXT" && s.TLS == nil && s.Mechanism == "" }},
		{map[string]string{"security.protocol": "ssl", "ssl.truststore.type": "PEM", "ssl.truststore.certificates": trust}, "",
			func(s *Security) bool { return s.TLS != nil && s.TLSFor("h:1").ServerName == "h" }},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.certificates": trust,
			"ssl.endpoint.identification.algorithm": ""}, "",
			func(s *Security) bool { return s.TLSFor("h:1").ServerName == "" }},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
			"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";`}, "",
			func(s *Security) bool {
				return s.Mechanism == "SCRAM-SHA-256" && s.Username == "u" && s.Password == "p" && len(s.KgoOpts()) == 1
			}},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT"}, "sasl.jaas.config is required for GSSAPI", nil},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
			"sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="broker";`}, "",
			func(s *Security) bool { return s.Mechanism == "OAUTHBEARER" && s.mech != nil && len(s.KgoOpts()) == 1 }},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER"}, "sasl.jaas.config is required for OAUTHBEARER", nil},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "DIGEST-MD5"}, "not supported on the client side", nil},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "sasl.jaas.config is needed", nil},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
			"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";`}, "must use", nil},
		{map[string]string{"security.protocol": "TLS"}, "is not one of", nil},
	} {
		s, err := New(func(k string) (string, bool) { v, ok := tc.props[k]; return v, ok }, "", "")
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: %v, want %q", tc.props, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !tc.check(s) {
			t.Errorf("%v: %+v, %v", tc.props, s, err)
		}
	}
}
