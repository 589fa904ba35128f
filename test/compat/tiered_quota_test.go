package compat

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/poll"
)

// TestTieredStorageQuotas checks KIP-956's copy and fetch quotas: with
// remote.log.manager.copy.max.bytes.per.second the bucket fills at about
// that rate, never much faster, and still receives every rolled segment;
// with remote.log.manager.fetch.max.bytes.per.second, set at run time as a
// cluster-wide dynamic broker config, a consumer reading the remote tier
// gets every record, in order, no faster than the quota lets it. Only
// lower bounds on time are asserted: a slow machine cannot make them fail.
func TestTieredStorageQuotas(t *testing.T) {
	skipOnKfake(t, "tiered storage is Vltava's")
	const rate = 512 << 10 // bytes per second, both quotas
	b, srv := startTieredBroker(t,
		WithOverride("remote.log.manager.copy.max.bytes.per.second", fmt.Sprint(rate)),
		WithOverride("remote.log.manager.copy.quota.window.num", "2"),
		WithOverride("remote.log.manager.copy.quota.window.size.seconds", "1"),
		WithOverride("remote.log.manager.fetch.quota.window.num", "2"),
		WithOverride("remote.log.manager.fetch.quota.window.size.seconds", "1"))
	adm := newAdmin(t, b)
	topic := createOutageTopic(t, adm) // 256 KiB segments, 512 KiB kept locally
	prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(64<<10))
	const n = 4096 // 4 MiB of 1 KiB records: 15 rolled segments
	produceRange(t, prod, 0, n)
	prod.Close()

	// The copies: from the first object to ~3 MiB in the bucket takes at
	// least (3 MiB - one burst of the two windows - one segment) / rate.
	var first time.Time
	const target = 3 << 20
	if err := poll.Err(2*time.Minute, func() error {
		_, bytes := bucketUsage(t, srv)
		if bytes > 0 && first.IsZero() {
			first = time.Now()
		}
		if bytes < target {
			return fmt.Errorf("bucket holds %d bytes", bytes)
		}
		return nil
	}); err != nil {
		t.Fatalf("the copies did not go on under the quota: %v", err)
	}
	took := time.Since(first)
	if minimum := time.Duration(float64(target-2*rate-outageSegmentBytes-rate) / rate * float64(time.Second)); took < minimum {
		t.Fatalf("%d bytes copied in %v under a %d B/s quota, want ≥ %v", target, took, rate, minimum)
	}
	t.Logf("%d bytes copied in %v under a %d B/s copy quota", target, took, rate)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var localStart int64
	if err := poll.Err(2*time.Minute, func() error {
		var err error
		if localStart, err = listOffset(ctx, b, topic, -4); err != nil {
			return err
		}
		if localStart < 2048 {
			return fmt.Errorf("earliest-local offset %d", localStart)
		}
		return nil
	}); err != nil {
		t.Fatalf("the topic was not tiered: %v", err)
	}
	// The fetch quota, set now for the whole cluster (a dynamic broker
	// config, as Kafka's DynamicRemoteLogConfig), applies at once.
	key := "remote.log.manager.fetch.max.bytes.per.second"
	value := fmt.Sprint(rate)
	altered, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: &value}})
	if err == nil {
		for _, a := range altered {
			if a.Err != nil {
				err = fmt.Errorf("%w (%s)", a.Err, a.ErrMessage)
			}
		}
	}
	if err != nil {
		t.Fatalf("setting %s: %v", key, err)
	}
	if err := poll.Err(30*time.Second, func() error {
		rcs, err := adm.DescribeBrokerConfigs(ctx)
		if err != nil {
			return err
		}
		for _, rc := range rcs {
			for _, c := range rc.Configs {
				if c.Key == key && c.Value != nil && *c.Value == value {
					return nil
				}
			}
		}
		return fmt.Errorf("%s not %s yet", key, value)
	}); err != nil {
		t.Fatal(err)
	}
	// The fetches: the remote part, > 2 MiB, read at no more than the
	// quota after a first burst.
	start := time.Now()
	readRange(t, b, topic, 0, int(localStart), kgo.FetchMaxPartitionBytes(256<<10))
	took = time.Since(start)
	remote := localStart * 1024
	if minimum := time.Duration(float64(remote-2*rate-rate) / rate * float64(time.Second)); took < minimum {
		t.Fatalf("%d remote bytes read in %v under a %d B/s fetch quota, want ≥ %v", remote, took, rate, minimum)
	}
	t.Logf("%d remote bytes read in %v under a %d B/s fetch quota", remote, took, rate)
}
