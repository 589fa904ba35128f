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
		{"admin.listeners", "https://127.0.0.1:9644"}: "admin.listeners",
		{"admin.listeners", "127.0.0.1:9644"}:         "admin.listeners",
		{"log.format", "xml"}:                         "log.format",
		{"metrics.partition.level", "none"}:           "metrics.partition.level",
		{"log.request.sample.rate", "2"}:              "log.request.sample.rate",
	} {
		if _, _, err := ParseBroker(map[string]string{props[0]: props[1]}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%s: %v, want an error naming %s", props[0], props[1], err, want)
		}
	}
	if _, _, err := ParseBroker(map[string]string{"telemetry.enable": "true", "admin.listeners": ""}); err == nil || !strings.Contains(err.Error(), "telemetry.enable") {
		t.Errorf("telemetry without an admin listener: %v", err)
	}
}
