package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestResolveTopicPrecedence(t *testing.T) {
	tests := []struct {
		name      string
		static    map[string]string
		dynamic   map[string]string
		overrides map[string]string
		check     func(Topic) (got, want any)
	}{
		{"kafka default", nil, nil, nil, func(tc Topic) (any, any) { return tc.RetentionMs, int64(604800000) }},
		{"static hours", map[string]string{"log.retention.hours": "1"}, nil, nil, func(tc Topic) (any, any) { return tc.RetentionMs, int64(hourMs) }},
		{"static ms beats static hours", map[string]string{"log.retention.hours": "1", "log.retention.ms": "500"}, nil, nil, func(tc Topic) (any, any) { return tc.RetentionMs, int64(500) }},
		{"dynamic default beats static", map[string]string{"log.retention.ms": "500"}, map[string]string{"log.retention.ms": "700"}, nil, func(tc Topic) (any, any) { return tc.RetentionMs, int64(700) }},
		{"dynamic hours displace static ms", map[string]string{"log.retention.ms": "500"}, map[string]string{"log.retention.hours": "2"}, nil, func(tc Topic) (any, any) { return tc.RetentionMs, int64(2 * hourMs) }},
		{"topic override beats everything", map[string]string{"log.retention.ms": "500"}, map[string]string{"log.retention.ms": "700"}, map[string]string{"retention.ms": "900"}, func(tc Topic) (any, any) { return tc.RetentionMs, int64(900) }},
		{"segment.ms from log.roll.hours", map[string]string{"log.roll.hours": "3"}, nil, nil, func(tc Topic) (any, any) { return tc.SegmentMs, int64(3 * hourMs) }},
		{"max.message.bytes from message.max.bytes", map[string]string{"message.max.bytes": "2000"}, nil, nil, func(tc Topic) (any, any) { return tc.MaxMessageBytes, int32(2000) }},
		{"flush.ms from scheduler interval", map[string]string{"log.flush.scheduler.interval.ms": "100"}, nil, nil, func(tc Topic) (any, any) { return tc.FlushMs, int64(100) }},
		{"cleanup policy both", nil, map[string]string{"log.cleanup.policy": "compact, delete"}, nil, func(tc Topic) (any, any) {
			return [2]bool{tc.CleanupPolicyCompact, tc.CleanupPolicyDelete}, [2]bool{true, true}
		}},
		{"compaction default from cleaner config", map[string]string{"log.cleaner.min.cleanable.ratio": "0.2"}, nil, nil, func(tc Topic) (any, any) { return tc.MinCleanableDirtyRatio, 0.2 }},
		{"deprecated difference applies to before and after", nil, nil, map[string]string{"message.timestamp.difference.max.ms": "1000"}, func(tc Topic) (any, any) {
			return [2]int64{tc.MessageTimestampBeforeMaxMs, tc.MessageTimestampAfterMaxMs}, [2]int64{1000, 1000}
		}},
		{"explicit before wins over difference", nil, nil, map[string]string{"message.timestamp.difference.max.ms": "1000", "message.timestamp.before.max.ms": "50"}, func(tc Topic) (any, any) {
			return [2]int64{tc.MessageTimestampBeforeMaxMs, tc.MessageTimestampAfterMaxMs}, [2]int64{50, 1000}
		}},
		{"topic without server default", nil, nil, nil, func(tc Topic) (any, any) { return tc.LocalRetentionMs, int64(-2) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustParseBroker(t, tt.static)
			tc, err := ResolveTopic(b, tt.dynamic, tt.overrides)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := tt.check(tc); got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestValidateTopicConfigs(t *testing.T) {
	tests := []struct {
		name      string
		overrides map[string]string
		wantMsg   string // "" = valid
	}{
		{"valid", map[string]string{"retention.ms": "-1", "cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": "0.1"}, ""},
		{"unknown name", map[string]string{"retention.hours": "1"}, "Unknown topic config name: retention.hours"},
		{"not a number", map[string]string{"retention.ms": "week"}, "Invalid value week for configuration retention.ms: Not a number of type LONG"},
		{"below minimum", map[string]string{"retention.ms": "-2"}, "Invalid value -2 for configuration retention.ms: Value must be at least -1"},
		{"enum", map[string]string{"message.timestamp.type": "AppendTime"}, "Invalid value AppendTime for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"},
		{"list enum", map[string]string{"cleanup.policy": "compact,archive"}, "Invalid value compact,archive for configuration cleanup.policy: String must be one of: compact, delete"},
		{"boolean", map[string]string{"preallocate": "1"}, "Invalid value 1 for configuration preallocate: Expected value to be either true or false"},
		{"double range", map[string]string{"min.cleanable.dirty.ratio": "2"}, "Invalid value 2 for configuration min.cleanable.dirty.ratio: Value must be no more than 1.0"},
		{"gzip level", map[string]string{"compression.gzip.level": "10"}, "Value must be between 1 and 9, or -1"},
		{"gzip -1 allowed", map[string]string{"compression.gzip.level": "-1"}, ""},
		{"throttled replicas", map[string]string{"leader.replication.throttled.replicas": "0:1,1:x"}, "partitionId:brokerId"},
		{"throttled wildcard", map[string]string{"leader.replication.throttled.replicas": "*"}, ""},
		{"throttled replicas at the default", map[string]string{"leader.replication.throttled.replicas": ""}, ""},
		{"preallocate", map[string]string{"preallocate": "true"}, "preallocate: segment files are not preallocated"},
		{"compaction lag conflict", map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"},
		{"tiered storage", map[string]string{"remote.storage.enable": "true"}, "Tiered Storage functionality is disabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateTopicConfigs(tt.overrides)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("error = %v, want containing %q", err, tt.wantMsg)
			}
			if !errors.Is(err, kerr.InvalidConfig) || !IsInvalidConfig(err) {
				t.Errorf("error %v does not wrap kerr.InvalidConfig", err)
			}
		})
	}
}

func TestResolveTopicRejectsInvalidOverrides(t *testing.T) {
	b := mustParseBroker(t, nil)
	if _, err := ResolveTopic(b, nil, map[string]string{"segment.bytes": "1"}); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("err = %v, want INVALID_CONFIG", err)
	}
	// The compaction lag check also sees values inherited from the broker.
	b = mustParseBroker(t, map[string]string{"log.cleaner.max.compaction.lag.ms": "100"})
	if _, err := ResolveTopic(b, nil, map[string]string{"min.compaction.lag.ms": "200"}); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("err = %v, want INVALID_CONFIG", err)
	}
}

func TestJavaDoubleFormatting(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0.0"}, {0.5, "0.5"}, {1, "1.0"}, {0.9, "0.9"}, {1234567, "1234567.0"},
		{1e7, "1.0E7"}, {1.7976931348623157e308, "1.7976931348623157E308"}, {1e-4, "1.0E-4"}, {-2.5, "-2.5"},
	}
	for _, tt := range tests {
		if got := javaDouble(tt.in); got != tt.want {
			t.Errorf("javaDouble(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTopicDefLookup(t *testing.T) {
	d, ok := TopicDef("segment.bytes")
	if !ok || d.Type != Int || d.Default != "1073741824" || d.Valid != "[14,...]" {
		t.Errorf("TopicDef(segment.bytes) = %+v, %v", d, ok)
	}
	if _, ok := TopicDef("log.segment.bytes"); ok {
		t.Error("broker key found among topic defs")
	}
	if s, ok := TopicServerDefault("segment.ms"); !ok || s != "log.roll.ms" {
		t.Errorf("TopicServerDefault(segment.ms) = %q, %v", s, ok)
	}
}

func TestTieredTopicRulesOfKIP950(t *testing.T) {
	b := mustParseBroker(t, map[string]string{"remote.log.storage.system.enable": "true"})
	on := map[string]string{"remote.storage.enable": "true"}
	// Copying stopped: the local retention is the total one.
	for _, tt := range []struct {
		overrides map[string]string
		ok        bool
	}{
		{map[string]string{"remote.storage.enable": "true", "remote.log.copy.disable": "true"}, true},
		{map[string]string{"remote.storage.enable": "true", "remote.log.copy.disable": "true", "local.retention.ms": "1000", "retention.ms": "1000"}, true},
		{map[string]string{"remote.storage.enable": "true", "remote.log.copy.disable": "true", "local.retention.ms": "1000"}, false},
		{map[string]string{"remote.storage.enable": "true", "remote.log.copy.disable": "true", "local.retention.bytes": "1024", "retention.bytes": "4096"}, false},
		{map[string]string{"remote.storage.enable": "true", "local.retention.bytes": "1024", "retention.bytes": "4096"}, true},
	} {
		err := ValidateTopicConfigsFor(b, tt.overrides)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, kerr.InvalidConfig)) {
			t.Errorf("%v: %v, want ok=%v", tt.overrides, err, tt.ok)
		}
	}
	// Turning tiering off deletes the remote data, and must say so.
	for _, tt := range []struct {
		old, next map[string]string
		ok        bool
	}{
		{on, map[string]string{}, false},
		{on, map[string]string{"remote.storage.enable": "false"}, false},
		{on, map[string]string{"remote.storage.enable": "false", "remote.log.delete.on.disable": "true"}, true},
		{on, map[string]string{"remote.storage.enable": "true", "remote.log.copy.disable": "true"}, true},
		{map[string]string{}, map[string]string{"remote.storage.enable": "false"}, true},
		{map[string]string{}, on, true},
	} {
		err := ValidateTopicChange(tt.old, tt.next)
		if (err == nil) != tt.ok || (err != nil && (!errors.Is(err, kerr.InvalidConfig) || !strings.Contains(err.Error(), "remote.log.delete.on.disable"))) {
			t.Errorf("%v → %v: %v, want ok=%v", tt.old, tt.next, err, tt.ok)
		}
	}
}
