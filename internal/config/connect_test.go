package config

import (
	"strings"
	"testing"
)

func TestConnectWorkerKeys(t *testing.T) {
	b, warnings, err := ParseBroker(map[string]string{
		"connect.enable":                         "true",
		"connect.listeners":                      "http://127.0.0.1:18083",
		"connect.value.converter.schemas.enable": "false",
		"connect.connect.protocol":               "eager",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings %q: the connect.* keys belong to the worker", warnings)
	}
	if !b.ConnectEnable {
		t.Error("connect.enable not set")
	}
	want := map[string]string{"listeners": "http://127.0.0.1:18083", "value.converter.schemas.enable": "false", "connect.protocol": "eager"}
	if len(b.ConnectWorker) != len(want) {
		t.Fatalf("worker keys %v, want %v", b.ConnectWorker, want)
	}
	for k, v := range want {
		if b.ConnectWorker[k] != v {
			t.Errorf("worker key %s = %q, want %q", k, b.ConnectWorker[k], v)
		}
	}

	// A worker setting without the worker is refused, naming the key.
	_, _, err = ParseBroker(map[string]string{"connect.group.id": "g"})
	if err == nil || !strings.Contains(err.Error(), "connect.group.id") || !strings.Contains(err.Error(), "connect.enable") {
		t.Fatalf("connect.group.id without connect.enable: %v", err)
	}
	// The default: no worker.
	b, _, err = ParseBroker(map[string]string{})
	if err != nil || b.ConnectEnable || len(b.ConnectWorker) != 0 {
		t.Fatalf("defaults: %v %v %v", err, b.ConnectEnable, b.ConnectWorker)
	}
}
