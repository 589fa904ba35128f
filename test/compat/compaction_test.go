package compat

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompactedTopicKeepsLatestValuePerKey produces many updates to a few
// keys of a cleanup.policy=compact topic whose segments roll quickly, lets
// the log cleaner run, and checks that a fresh consumer reading from the
// start sees exactly one record per key, holding its latest value, with
// offsets increasing.
func TestCompactedTopicKeepsLatestValuePerKey(t *testing.T) {
	skipOnKfake(t, "kfake does not compact")
	b := StartBroker(t, WithOverride("log.cleaner.backoff.ms", "100"))
	topic := uniqueTopic(t)
	str := func(s string) *string { return &s }
	createTopic(t, newAdmin(t, b), topic, 1, map[string]*string{
		"cleanup.policy":            str("compact"),
		"segment.ms":                str("100"),
		"segment.bytes":             str("4096"),
		"min.cleanable.dirty.ratio": str("0.01"),
	})
	prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := testContext(t, 90*time.Second)
	const keys, updates = 5, 40
	latest := map[string]string{}
	for u := range updates {
		for k := range keys {
			key, value := fmt.Sprintf("key-%d", k), fmt.Sprintf("value-%d-%d", k, u)
			if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: []byte(value)}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			latest[key] = value
		}
	}

	// The last updates sit in the active segment, which is never cleaned:
	// keep appending a marker record so segment.ms rolls it, until a
	// fresh consumer sees the compacted log.
	eventually(t, 60*time.Second, func() error {
		if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte("marker"), Value: []byte("m")}).FirstErr(); err != nil {
			return err
		}
		return checkCompactedTopic(t, b, topic, latest)
	})
}

// checkCompactedTopic reads topic partition 0 from offset 0 to its end with
// a new client and reports whether every key in latest appears exactly once
// with its latest value.
func checkCompactedTopic(t *testing.T, b *Broker, topic string, latest map[string]string) error {
	t.Helper()
	adm := newAdmin(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || end.Err != nil {
		return fmt.Errorf("end offset of %s: %v", topic, end.Err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	seen := map[string][]string{}
	prev := int64(-1)
	for prev < end.Offset-1 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		for _, r := range fs.Records() {
			if r.Offset <= prev {
				t.Fatalf("offset %d after %d", r.Offset, prev)
			}
			prev = r.Offset
			seen[string(r.Key)] = append(seen[string(r.Key)], string(r.Value))
		}
	}
	for k, v := range latest {
		got := seen[k]
		if len(got) == 0 || got[len(got)-1] != v {
			t.Fatalf("key %s: last value read %v, want %q", k, got, v)
		}
		if len(got) != 1 {
			return fmt.Errorf("key %s not compacted yet: %d values", k, len(got))
		}
	}
	return nil
}
