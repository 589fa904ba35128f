package compat

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFranzAdmin covers topic and config administration through kadm:
// CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
// AlterConfigs and IncrementalAlterConfigs.
func TestFranzAdmin(t *testing.T) {
	t.Parallel()
	b := StartBroker(t)

	t.Run("CreateListDeleteTopics", func(t *testing.T) {
		t.Parallel()
		adm := newAdmin(t, b)
		ctx := testContext(t, 60*time.Second)
		keep, drop := uniqueTopic(t)+"-keep", uniqueTopic(t)+"-drop"
		createTopic(t, adm, keep, 3, nil)
		createTopic(t, adm, drop, 2, nil)

		// Creating an existing topic is TOPIC_ALREADY_EXISTS, not success.
		again, err := adm.CreateTopics(ctx, 3, 1, nil, keep)
		if err != nil {
			t.Fatal(err)
		}
		if r := again[keep]; !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			t.Fatalf("re-creating %s: got %v, want TOPIC_ALREADY_EXISTS", keep, r.Err)
		}

		listed, err := adm.ListTopics(ctx, keep, drop)
		if err != nil {
			t.Fatal(err)
		}
		for topic, want := range map[string]int{keep: 3, drop: 2} {
			td, ok := listed[topic]
			if !ok || td.Err != nil {
				t.Fatalf("ListTopics lacks %s (err %v)", topic, td.Err)
			}
			if len(td.Partitions) != want {
				t.Fatalf("%s has %d partitions, want %d", topic, len(td.Partitions), want)
			}
			for p := range want {
				if _, ok := td.Partitions[int32(p)]; !ok {
					t.Fatalf("%s lacks partition %d: %v", topic, p, td.Partitions.Numbers())
				}
			}
		}

		del, err := adm.DeleteTopics(ctx, drop)
		if err != nil {
			t.Fatal(err)
		}
		if r := del[drop]; r.Err != nil {
			t.Fatalf("DeleteTopics %s: %v", drop, r.Err)
		}
		eventually(t, 20*time.Second, func() error {
			all, err := adm.ListTopics(ctx)
			if err != nil {
				return err
			}
			if all.Has(drop) {
				return fmt.Errorf("%s still listed after delete", drop)
			}
			if !all.Has(keep) {
				return fmt.Errorf("%s vanished when deleting %s", keep, drop)
			}
			return nil
		})

		// Deleting it again names the topic as unknown.
		del, err = adm.DeleteTopics(ctx, drop)
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(del[drop].Err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("deleting %s twice: got %v, want UNKNOWN_TOPIC_OR_PARTITION", drop, del[drop].Err)
		}
	})

	t.Run("CreatePartitions", func(t *testing.T) {
		t.Parallel()
		adm := newAdmin(t, b)
		ctx := testContext(t, 60*time.Second)
		topic := uniqueTopic(t)
		createTopic(t, adm, topic, 2, nil)

		resp, err := adm.UpdatePartitions(ctx, 5, topic)
		if err != nil {
			t.Fatal(err)
		}
		if r := resp[topic]; r.Err != nil {
			t.Fatalf("CreatePartitions to 5: %v (%s)", r.Err, r.ErrMessage)
		}
		waitTopicPartitions(t, adm, topic, 5)

		// Shrinking is INVALID_PARTITIONS: Kafka never removes partitions.
		resp, err = adm.UpdatePartitions(ctx, 3, topic)
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(resp[topic].Err, kerr.InvalidPartitions) {
			t.Fatalf("CreatePartitions down to 3: got %v, want INVALID_PARTITIONS", resp[topic].Err)
		}

		// The new partitions take writes and serve them back.
		cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {4: kgo.NewOffset().AtStart()}}))
		produceSync(t, cl, &kgo.Record{Topic: topic, Partition: 4, Value: []byte("in-new-partition")})
		got := consume(t, cl, 1, 20*time.Second)
		if r := got[0]; r.Partition != 4 || r.Offset != 0 || string(r.Value) != "in-new-partition" {
			t.Fatalf("read back %s/%d@%d %q, want partition 4 offset 0 %q", r.Topic, r.Partition, r.Offset, r.Value, "in-new-partition")
		}
	})

	t.Run("DescribeAndAlterTopicConfigs", func(t *testing.T) {
		t.Parallel()
		adm := newAdmin(t, b)
		ctx := testContext(t, 60*time.Second)
		topic := uniqueTopic(t)
		createTopic(t, adm, topic, 1, map[string]*string{"retention.ms": kadm.StringPtr("123456")})

		// Set at creation: DYNAMIC_TOPIC_CONFIG. Untouched: Kafka's default.
		expectTopicConfigs(t, adm, topic, map[string]wantConfig{
			"retention.ms":      {"123456", kmsg.ConfigSourceDynamicTopicConfig},
			"cleanup.policy":    {"delete", kmsg.ConfigSourceDefaultConfig},
			"max.message.bytes": {"1048588", kmsg.ConfigSourceDefaultConfig},
		})

		// IncrementalAlterConfigs: SET one key, DELETE another (reverting it
		// to the default); keys not named keep their values.
		inc, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kadm.StringPtr("200000")},
			{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")},
		}, topic)
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := inc.On(topic, nil); r.Err != nil {
			t.Fatalf("IncrementalAlterConfigs: %v (%s)", r.Err, r.ErrMessage)
		}
		expectTopicConfigs(t, adm, topic, map[string]wantConfig{
			"retention.ms":      {"123456", kmsg.ConfigSourceDynamicTopicConfig},
			"cleanup.policy":    {"compact", kmsg.ConfigSourceDynamicTopicConfig},
			"max.message.bytes": {"200000", kmsg.ConfigSourceDynamicTopicConfig},
		})

		inc, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: "retention.ms"},
		}, topic)
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := inc.On(topic, nil); r.Err != nil {
			t.Fatalf("IncrementalAlterConfigs DELETE: %v (%s)", r.Err, r.ErrMessage)
		}
		expectTopicConfigs(t, adm, topic, map[string]wantConfig{
			"retention.ms":      {"604800000", kmsg.ConfigSourceDefaultConfig},
			"cleanup.policy":    {"compact", kmsg.ConfigSourceDynamicTopicConfig},
			"max.message.bytes": {"200000", kmsg.ConfigSourceDynamicTopicConfig},
		})

		// Legacy AlterConfigs replaces the whole set of dynamic configs:
		// anything not listed returns to its default.
		legacy, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{
			{Name: "segment.ms", Value: kadm.StringPtr("3600000")},
		}, topic)
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := legacy.On(topic, nil); r.Err != nil {
			t.Fatalf("AlterConfigs: %v (%s)", r.Err, r.ErrMessage)
		}
		expectTopicConfigs(t, adm, topic, map[string]wantConfig{
			"segment.ms":        {"3600000", kmsg.ConfigSourceDynamicTopicConfig},
			"cleanup.policy":    {"delete", kmsg.ConfigSourceDefaultConfig},
			"max.message.bytes": {"1048588", kmsg.ConfigSourceDefaultConfig},
		})
	})

	t.Run("UnknownTopicConfigRejected", func(t *testing.T) {
		t.Parallel()
		skipOnKfake(t, "kfake accepts unknown topic config names")
		adm := newAdmin(t, b)
		ctx := testContext(t, 30*time.Second)
		topic := uniqueTopic(t)
		createTopic(t, adm, topic, 1, nil)
		// Kafka validates topic config names: an unknown one is
		// INVALID_CONFIG, and nothing is changed.
		bad, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: "no.such.config", Value: kadm.StringPtr("1")},
		}, topic)
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := bad.On(topic, nil); !errors.Is(r.Err, kerr.InvalidConfig) {
			t.Fatalf("setting an unknown config: got %v, want INVALID_CONFIG", r.Err)
		}
	})
}

// wantConfig is the expected value and source of one described config.
type wantConfig struct {
	value  string
	source kmsg.ConfigSource
}

// expectTopicConfigs describes topic's configs and checks each named one.
func expectTopicConfigs(t *testing.T, adm *kadm.Client, topic string, want map[string]wantConfig) {
	t.Helper()
	ctx := testContext(t, 20*time.Second)
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("DescribeConfigs %s: %v %v", topic, err, rc.Err)
	}
	got := make(map[string]kadm.Config, len(rc.Configs))
	for _, c := range rc.Configs {
		got[c.Key] = c
	}
	for key, w := range want {
		c, ok := got[key]
		if !ok {
			t.Errorf("%s: config %s not described", topic, key)
			continue
		}
		if c.Value == nil || *c.Value != w.value || c.Source != w.source {
			t.Errorf("%s: %s = %v (source %v), want %q (source %v)", topic, key, c.MaybeValue(), c.Source, w.value, w.source)
		}
	}
}
