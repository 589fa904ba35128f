package compat

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestTieredStorageRefusedWhereKafkaRefusesIt: a compacted topic cannot be
// tiered, at creation or by a later change of either setting, and a node
// without remote.log.storage.system.enable tiers nothing; each is
// INVALID_CONFIG with Kafka's reason.
func TestTieredStorageRefusedWhereKafkaRefusesIt(t *testing.T) {
	skipOnKfake(t, "tiered storage is Vltava's")
	str := func(s string) *string { return &s }
	ctx := testContext(t, time.Minute)
	refused := func(t *testing.T, what string, err error, msg string, want string) {
		t.Helper()
		if !errors.Is(err, kerr.InvalidConfig) {
			t.Fatalf("%s: %v (%q), want INVALID_CONFIG", what, err, msg)
		}
		if !strings.Contains(msg, want) {
			t.Fatalf("%s: message %q, want it to say %q", what, msg, want)
		}
	}

	t.Run("compacted", func(t *testing.T) {
		b, _ := startTieredBroker(t)
		adm := newAdmin(t, b)
		topic := uniqueTopic(t)
		resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"remote.storage.enable": str("true"), "cleanup.policy": str("compact")}, topic)
		if err == nil {
			err = resp.Err
		}
		refused(t, "creating a compacted tiered topic", err, resp.ErrMessage, "compacted")

		// A tiered topic made compacted, and a compacted one made tiered.
		tiered, compacted := uniqueTopic(t)+"-tiered", uniqueTopic(t)+"-compacted"
		createTopic(t, adm, tiered, 1, map[string]*string{"remote.storage.enable": str("true")})
		createTopic(t, adm, compacted, 1, map[string]*string{"cleanup.policy": str("compact")})
		for _, c := range []struct {
			topic, key, value string
		}{{tiered, "cleanup.policy", "compact"}, {compacted, "remote.storage.enable", "true"}} {
			rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: c.key, Value: str(c.value)}}, c.topic)
			var msg string
			if err == nil {
				r, _ := rs.On(c.topic, nil)
				err, msg = r.Err, r.ErrMessage
			}
			refused(t, "setting "+c.key+"="+c.value+" on "+c.topic, err, msg, "compacted")
		}
	})

	t.Run("broker without tiering", func(t *testing.T) {
		b := StartBroker(t)
		adm := newAdmin(t, b)
		topic := uniqueTopic(t)
		resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"remote.storage.enable": str("true")}, topic)
		if err == nil {
			err = resp.Err
		}
		refused(t, "a tiered topic on a node without tiered storage", err, resp.ErrMessage, "Tiered Storage functionality is disabled")
	})
}
