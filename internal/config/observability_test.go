package config

import (
	"strings"
	"testing"
)

func TestObservabilityKeys(t *testing.T) {
	b, _, err := ParseBroker(map[string]string{
		"admin.listeners":         "http://127.0.0.1:19644,http://[::1]:19645",
		"metrics.partition.level": "topic",
		"log.format":              "json",
		"log.request.sample.rate": "0.25",
		"telemetry.enable":        "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.AdminListeners) != 2 || b.AdminListeners[1].Addr() != "[::1]:19645" || b.MetricsPartitionLevel != "topic" ||
		b.LogFormat != "json" || b.LogRequestSampleRate != 0.25 || !b.TelemetryEnable {
		t.Errorf("parsed %+v %v %v %v %v", b.AdminListeners, b.MetricsPartitionLevel, b.LogFormat, b.LogRequestSampleRate, b.TelemetryEnable)
	}
	for props, want := range map[[2]string]string{
		{"admin.listeners", "ftp://127.0.0.1:9644"}:        "admin.listeners",
		{"admin.listeners", "127.0.0.1:9644"}:              "admin.listeners",
		{"log.format", "xml"}:                              "log.format",
		{"metrics.partition.level", "none"}:                "metrics.partition.level",
		{"log.request.sample.rate", "2"}:                   "log.request.sample.rate",
		{"admin.authentication.method", "BEARER"}:          "admin.authentication.method",
		{"admin.ssl.client.authentication", "SOMETIMES"}:   "admin.ssl.client.authentication",
		{"admin.ssl.provider", "SunJSSE"}:                  "admin.ssl.provider",
		{"admin.authentication.users.files", "/etc/users"}: "admin.authentication.users.files",
	} {
		if _, _, err := ParseBroker(map[string]string{props[0]: props[1]}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%s: %v, want an error naming %s", props[0], props[1], err, want)
		}
	}
	if _, _, err := ParseBroker(map[string]string{"telemetry.enable": "true", "admin.listeners": ""}); err == nil || !strings.Contains(err.Error(), "telemetry.enable") {
		t.Errorf("telemetry without an admin listener: %v", err)
	}
	if _, _, err := ParseBroker(map[string]string{"telemetry.enable": "true", "metrics.enable": "false"}); err == nil || !strings.Contains(err.Error(), "telemetry.enable") {
		t.Errorf("telemetry without metrics: %v", err)
	}
	b, _, err = ParseBroker(map[string]string{"admin.listeners": "https://127.0.0.1:9644", "admin.ssl.keystore.location": "/ks.p12",
		"admin.authentication.method": "basic"})
	if err != nil || b.AdminListeners[0].Scheme != "https" {
		t.Fatalf("https admin listener: %v", err)
	}
	if v, ok := b.HTTPServiceSetting("admin.ssl.keystore.location"); !ok || v != "/ks.p12" {
		t.Errorf("HTTPServiceSetting(admin.ssl.keystore.location) = %q %v", v, ok)
	}
	if _, ok := b.HTTPServiceSetting("admin.authentication.realm"); ok {
		t.Error("an unset key reads as set (httpapi applies the defaults)")
	}
}
