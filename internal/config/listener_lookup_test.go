package config

import "testing"

// TestListenerLookupOrder: listener.name.<l>.<mechanism>.<key>, then
// listener.name.<l>.<key>, then <key>, then the default; dynamic layers over
// the static ones; the listener prefix in any case.
func TestListenerLookupOrder(t *testing.T) {
	b, _, err := ParseBroker(map[string]string{
		"listeners":                                             "SASL_SSL://127.0.0.1:9093",
		"inter.broker.listener.name":                            "SASL_SSL",
		"sasl.jaas.config":                                      "broker-wide",
		"listener.name.sasl_ssl.sasl.jaas.config":               "listener",
		"listener.name.SASL_SSL.plain.sasl.jaas.config":         "mechanism",
		"listener.name.sasl_ssl.ssl.keystore.location":          "/static",
		"listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": "scram",
	})
	if err != nil {
		t.Fatal(err)
	}
	get := func(l, mech, key string, layers ...map[string]string) string {
		v, _ := b.ListenerLookup(l, mech, layers...)(key)
		return v
	}
	for _, tc := range []struct{ mech, key, want string }{
		{"PLAIN", "sasl.jaas.config", "mechanism"},
		{"SCRAM-SHA-256", "sasl.jaas.config", "scram"},
		{"SCRAM-SHA-512", "sasl.jaas.config", "listener"},
		{"", "sasl.jaas.config", "listener"},
		{"", "ssl.client.auth", "none"},
		{"", "ssl.keystore.location", "/static"},
	} {
		if got := get("SASL_SSL", tc.mech, tc.key); got != tc.want {
			t.Errorf("%s %s = %q, want %q", tc.mech, tc.key, got, tc.want)
		}
	}
	if got := get("OTHER", "", "sasl.jaas.config"); got != "broker-wide" {
		t.Errorf("another listener: %q", got)
	}
	dyn := map[string]string{"listener.name.sasl_ssl.ssl.keystore.location": "/dynamic"}
	if got := get("SASL_SSL", "", "ssl.keystore.location", dyn); got != "/dynamic" {
		t.Errorf("dynamic layer: %q", got)
	}
	if _, ok := b.ListenerLookup("SASL_SSL", "")("ssl.truststore.location"); ok {
		t.Error("a key without default and unset is found")
	}
}
