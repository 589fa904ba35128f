package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// syn renders synonyms compactly: "SOURCE:name=value" (value "null" if unset).
func syn(ss []Synonym) []string {
	out := []string{}
	for _, s := range ss {
		v := "null"
		if s.HasValue {
			v = s.Value
		}
		out = append(out, fmt.Sprintf("%s:%s=%s", s.Source, s.Name, v))
	}
	return out
}

func findEntry(t *testing.T, entries []Entry, name string) Entry {
	t.Helper()
	for _, e := range entries {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no entry %s", name)
	return Entry{}
}

// The expectations follow Kafka's ConfigHelper, including its quirk of
// dropping synonyms listed before the server default's own name.
func TestDescribeTopic(t *testing.T) {
	tests := []struct {
		name         string
		static       map[string]string
		dynamic      map[string]string
		overrides    map[string]string
		key          string
		wantValue    string
		wantSource   Source
		wantSynonyms []string
	}{
		{
			name: "retention.ms at Kafka's default has no synonyms", key: "retention.ms",
			wantValue: "604800000", wantSource: SourceDefaultConfig, wantSynonyms: []string{},
		},
		{
			name: "retention.ms from static hours only still reports DEFAULT_CONFIG", key: "retention.ms",
			static:    map[string]string{"log.retention.hours": "24"},
			wantValue: "86400000", wantSource: SourceDefaultConfig, wantSynonyms: []string{},
		},
		{
			name: "retention.ms with every layer set", key: "retention.ms",
			static:    map[string]string{"log.retention.ms": "500", "log.retention.hours": "1"},
			dynamic:   map[string]string{"log.retention.ms": "700"},
			overrides: map[string]string{"retention.ms": "1000"},
			wantValue: "1000", wantSource: SourceDynamicTopicConfig,
			wantSynonyms: []string{
				"DYNAMIC_TOPIC_CONFIG:retention.ms=1000",
				"DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=700",
				"STATIC_BROKER_CONFIG:log.retention.ms=500",
				"STATIC_BROKER_CONFIG:log.retention.hours=1",
				"DEFAULT_CONFIG:log.retention.hours=168",
			},
		},
		{
			name: "retention.ms from a dynamic cluster default", key: "retention.ms",
			dynamic:   map[string]string{"log.retention.ms": "700"},
			wantValue: "700", wantSource: SourceDynamicDefaultBrokerConfig,
			wantSynonyms: []string{
				"DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=700",
				"DEFAULT_CONFIG:log.retention.hours=168",
			},
		},
		{
			name: "segment.bytes default", key: "segment.bytes",
			wantValue: "1073741824", wantSource: SourceDefaultConfig,
			wantSynonyms: []string{"DEFAULT_CONFIG:log.segment.bytes=1073741824"},
		},
		{
			name: "segment.bytes from static broker config", key: "segment.bytes",
			static:    map[string]string{"log.segment.bytes": "1048576"},
			wantValue: "1048576", wantSource: SourceStaticBrokerConfig,
			wantSynonyms: []string{"STATIC_BROKER_CONFIG:log.segment.bytes=1048576", "DEFAULT_CONFIG:log.segment.bytes=1073741824"},
		},
		{
			name: "cleanup.policy override", key: "cleanup.policy",
			overrides: map[string]string{"cleanup.policy": "compact"},
			wantValue: "compact", wantSource: SourceDynamicTopicConfig,
			wantSynonyms: []string{"DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact", "DEFAULT_CONFIG:log.cleanup.policy=delete"},
		},
		{
			name: "max.message.bytes maps to message.max.bytes", key: "max.message.bytes",
			wantValue: "1048588", wantSource: SourceDefaultConfig,
			wantSynonyms: []string{"DEFAULT_CONFIG:message.max.bytes=1048588"},
		},
		{
			name: "topic config without a server default", key: "remote.storage.enable",
			wantValue: "false", wantSource: SourceDefaultConfig, wantSynonyms: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustParseBroker(t, tt.static)
			entries := DescribeTopic(b, tt.dynamic, tt.overrides)
			if len(entries) != len(TopicDefs()) {
				t.Errorf("%d entries, want one per topic config (%d)", len(entries), len(TopicDefs()))
			}
			e := findEntry(t, entries, tt.key)
			if e.Value != tt.wantValue || !e.HasValue || e.Source != tt.wantSource || e.ReadOnly {
				t.Errorf("entry = %q hasValue=%v source=%v readOnly=%v, want %q %v", e.Value, e.HasValue, e.Source, e.ReadOnly, tt.wantValue, tt.wantSource)
			}
			if got := syn(e.Synonyms); !reflect.DeepEqual(got, tt.wantSynonyms) {
				t.Errorf("synonyms = %q, want %q", got, tt.wantSynonyms)
			}
		})
	}
}

func TestDescribeBroker(t *testing.T) {
	// Mirrors Kafka's DynamicBrokerReconfigurationTest expectations for
	// static log.retention.ms and log.retention.hours.
	b := mustParseBroker(t, map[string]string{
		"log.retention.ms":    "1680000000",
		"log.retention.hours": "168",
		"max.connections":     "4",
	})
	b.Raw["ssl.keystore.password"] = "hunter2" // refused by ParseBroker until TLS lands
	perBroker := map[string]string{"max.connections": "16"}
	dynDefault := map[string]string{"max.connections": "12", "log.retention.minutes": "10"}
	entries := DescribeBroker(b, perBroker, dynDefault)

	tests := []struct {
		key          string
		wantValue    string
		wantHas      bool
		wantSource   Source
		wantReadOnly bool
		wantSynonyms []string
	}{
		// The dynamic minutes displace the static ms and hours from the
		// effective config (so the ms value is null and hours is back at its
		// default), but synonyms list the static layer as written, like Kafka.
		{"log.retention.ms", "", false, SourceStaticBrokerConfig, false, []string{"STATIC_BROKER_CONFIG:log.retention.ms=1680000000", "STATIC_BROKER_CONFIG:log.retention.hours=168", "DEFAULT_CONFIG:log.retention.hours=168"}},
		{"log.retention.minutes", "10", true, SourceDynamicDefaultBrokerConfig, true, []string{"DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.minutes=10", "STATIC_BROKER_CONFIG:log.retention.ms=1680000000", "STATIC_BROKER_CONFIG:log.retention.hours=168", "DEFAULT_CONFIG:log.retention.hours=168"}},
		{"log.retention.hours", "168", true, SourceStaticBrokerConfig, true, []string{"STATIC_BROKER_CONFIG:log.retention.hours=168", "DEFAULT_CONFIG:log.retention.hours=168"}},
		{"log.roll.hours", "168", true, SourceDefaultConfig, true, []string{"DEFAULT_CONFIG:log.roll.hours=168"}},
		{"log.cleaner.threads", "1", true, SourceDefaultConfig, false, []string{"DEFAULT_CONFIG:log.cleaner.threads=1"}},
		{"max.connections", "16", true, SourceDynamicBrokerConfig, false, []string{"DYNAMIC_BROKER_CONFIG:max.connections=16", "DYNAMIC_DEFAULT_BROKER_CONFIG:max.connections=12", "STATIC_BROKER_CONFIG:max.connections=4", "DEFAULT_CONFIG:max.connections=2147483647"}},
		{"ssl.keystore.password", "", false, SourceStaticBrokerConfig, false, []string{"STATIC_BROKER_CONFIG:ssl.keystore.password=null"}},
		{"broker.rack", "", false, SourceDefaultConfig, true, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			e := findEntry(t, entries, tt.key)
			if e.Value != tt.wantValue || e.HasValue != tt.wantHas || e.Source != tt.wantSource || e.ReadOnly != tt.wantReadOnly {
				t.Errorf("entry = %q has=%v source=%v readOnly=%v; want %q %v %v %v", e.Value, e.HasValue, e.Source, e.ReadOnly, tt.wantValue, tt.wantHas, tt.wantSource, tt.wantReadOnly)
			}
			if got := syn(e.Synonyms); !reflect.DeepEqual(got, tt.wantSynonyms) {
				t.Errorf("synonyms = %q, want %q", got, tt.wantSynonyms)
			}
		})
	}
	// Static log.retention.ms without dynamic layers, as in Kafka's test.
	e := findEntry(t, DescribeBroker(b, nil, nil), "log.retention.ms")
	want := []string{"STATIC_BROKER_CONFIG:log.retention.ms=1680000000", "STATIC_BROKER_CONFIG:log.retention.hours=168", "DEFAULT_CONFIG:log.retention.hours=168"}
	if got := syn(e.Synonyms); !reflect.DeepEqual(got, want) || e.Value != "1680000000" {
		t.Errorf("log.retention.ms = %q synonyms %q, want %q", e.Value, got, want)
	}
	if e := findEntry(t, entries, "ssl.keystore.password"); !e.Sensitive || e.Type != Password {
		t.Errorf("ssl.keystore.password sensitive=%v type=%v", e.Sensitive, e.Type)
	}
}

func TestDescribeBrokerDefault(t *testing.T) {
	got := DescribeBrokerDefault(map[string]string{"log.retention.ms": "5", "custom.plugin.key": "x"})
	if len(got) != 2 {
		t.Fatalf("entries = %+v", got)
	}
	if got[0].Name != "custom.plugin.key" || got[0].HasValue || !got[0].Sensitive {
		t.Errorf("unknown key should be treated as sensitive, as Kafka does: %+v", got[0])
	}
	e := got[1]
	if e.Name != "log.retention.ms" || e.Value != "5" || e.Source != SourceDynamicDefaultBrokerConfig ||
		!reflect.DeepEqual(syn(e.Synonyms), []string{"DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=5"}) {
		t.Errorf("entry = %+v", e)
	}
}

func TestValidateBrokerDynamic(t *testing.T) {
	tests := []struct {
		name      string
		changes   map[string]string
		perBroker bool
		wantMsg   string
	}{
		{"log default", map[string]string{"log.retention.ms": "1000", "log.cleanup.policy": "compact"}, false, ""},
		{"thread pool at its default", map[string]string{"num.io.threads": "8"}, true, ""},
		{"thread pool", map[string]string{"num.io.threads": "4"}, true, "num.io.threads: Vltava has no fixed thread pools"},
		{"listeners per broker are read only at start-up", map[string]string{"listeners": "PLAINTEXT://:9092"}, true, "Vltava reads these configs only at start-up; set them in server.properties and restart: Set(listeners)"},
		{"unknown keys are stored, as in Kafka", map[string]string{"my.plugin.setting": "x"}, false, ""},
		{"unknown security keys are refused", map[string]string{"principal.builder.class": "x"}, true, "principal.builder.class: Java plugin classes cannot be loaded"},
		{"prefixed ssl config per broker", map[string]string{"listener.name.external.ssl.keystore.location": "/ks"}, true, ""},
		{"read-only key", map[string]string{"node.id": "3", "log.retention.hours": "1"}, true, "Cannot update these configs dynamically: Set(log.retention.hours, node.id)"},
		{"listeners at cluster level", map[string]string{"listeners": "PLAINTEXT://:9092"}, false, "Cannot update these configs at default cluster level, broker id must be specified: Set(listeners)"},
		{"ssl config without listener prefix", map[string]string{"ssl.keystore.location": "/ks"}, true, "only per-listener using the listener prefix: Set(ssl.keystore.location)"},
		{"bad value", map[string]string{"log.retention.ms": "soon"}, true, "Invalid value soon for configuration log.retention.ms: Not a number of type LONG"},
		{"zero threads", map[string]string{"num.replica.fetchers": "0"}, true, "value should be at least 1"},
		{"zero connection creation rate", map[string]string{"max.connection.creation.rate": "0"}, false, "max.connection.creation.rate: 0 would hold back"},
		{"connection creation rate", map[string]string{"max.connection.creation.rate": "5"}, false, ""},
		{"listener max.connections per broker", map[string]string{"listener.name.external.max.connections": "5"}, true, ""},
		// DynamicBrokerConfig.ClusterLevelListenerConfigs
		{"listener max.connections at cluster level", map[string]string{"listener.name.external.max.connections": "5"}, false, ""},
		{"listener max.connections 0", map[string]string{"listener.name.external.max.connections": "0"}, true, "listener.name.external.max.connections: Invalid max.connections 0; set at least 1"},
		{"listener max.connections negative", map[string]string{"listener.name.external.max.connections": "-2"}, true, "listener.name.external.max.connections"},
		{"listener connection creation rate", map[string]string{"listener.name.external.max.connection.creation.rate": "5"}, true, "per-listener overrides (listener.name.<listener>.<key>) are not supported"},
		{"bad protocol map", map[string]string{"listener.security.protocol.map": "A:B"}, true, "unknown security protocol"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			validate := ValidateBrokerDynamicDefault
			if tt.perBroker {
				validate = ValidateBrokerDynamic
			}
			err := validate(tt.changes)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("error = %v, want containing %q", err, tt.wantMsg)
			}
			if !errors.Is(err, kerr.InvalidConfig) {
				t.Errorf("error %v does not wrap kerr.InvalidConfig", err)
			}
		})
	}
}
