package config

import (
	"slices"
	"testing"
)

func TestAuthorizerKeys(t *testing.T) {
	for _, class := range authorizerClasses {
		b, _, err := ParseBroker(map[string]string{
			"authorizer.class.name":          class,
			"super.users":                    "User:admin; User:CN=broker,O=acme",
			"allow.everyone.if.no.acl.found": "true",
		})
		if err != nil {
			t.Fatalf("%s: %v", class, err)
		}
		if !b.AuthorizerEnabled() || !b.AllowEveryoneIfNoACLFound || !slices.Equal(b.SuperUsers, []string{"User:admin", "User:CN=broker,O=acme"}) {
			t.Fatalf("%s: parsed %q %v %q", class, b.AuthorizerClassName, b.AllowEveryoneIfNoACLFound, b.SuperUsers)
		}
		// Kafka's default: the controller listeners start early.
		if !slices.Equal(b.EarlyStartListeners, b.ControllerListenerNames) {
			t.Fatalf("early.start.listeners default %v, want %v", b.EarlyStartListeners, b.ControllerListenerNames)
		}
	}
	b, _, err := ParseBroker(map[string]string{})
	if err != nil || b.AuthorizerEnabled() {
		t.Fatalf("default config: authorizer %q, %v", b.AuthorizerClassName, err)
	}
	b, _, err = ParseBroker(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092,INTERNAL://127.0.0.1:9094",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"early.start.listeners":          "internal"})
	if err != nil || !slices.Equal(b.EarlyStartListeners, []string{"INTERNAL"}) {
		t.Fatalf("early.start.listeners=internal: %v, %v", b.EarlyStartListeners, err)
	}
}
