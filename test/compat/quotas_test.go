package compat

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The quota suites run the broker with a short quota window
// (quota.window.num=2 of 1 s, so the measured rate reacts within about a
// second) and check only generous bounds: the long-run rate stays under
// twice the quota. The 1 MB/s ± 10 % figure is bench/'s (docs/PERFORMANCE.md).
const quotaBytesPerSec = 256 << 10

func startQuotaBroker(t *testing.T) *Broker {
	skipOnKfake(t, "kfake has no client quotas")
	return StartBroker(t, WithOverride("quota.window.num", "2"), WithOverride("quota.window.size.seconds", "1"))
}

// setClientQuota sets key for client-id clientID with kadm.
func setClientQuota(t *testing.T, adm *kadm.Client, clientID, key string, value float64) {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &clientID}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: key, Value: value}},
	}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("AlterClientQuotas %s=%v for %s: %v %+v", key, value, clientID, err, res)
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// throttleHook counts the throttles franz-go was told of.
type throttleHook struct{ n atomic.Int64 }

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
	}
}

// TestFranzProducerQuota: a producer over producer_byte_rate is told to
// back off (throttle_time_ms > 0), keeps its connection, gets every record
// acknowledged, and its rate over a few seconds stays under twice the
// quota.
func TestFranzProducerQuota(t *testing.T) {
	b := startQuotaBroker(t)
	adm := newAdmin(t, b)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 1, nil)
	setClientQuota(t, adm, "quota-producer", "producer_byte_rate", quotaBytesPerSec)

	hook := &throttleHook{}
	// Uncompressed and incompressible: the quota counts request bytes.
	cl := newClient(t, b, kgo.ClientID("quota-producer"), kgo.WithHooks(hook), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(256), kgo.DefaultProduceTopic(topic))
	value := randomBytes(1024)
	var acked atomic.Int64
	var failed atomic.Value
	ctx := testContext(t, 60*time.Second)
	start := time.Now()
	for time.Since(start) < 5*time.Second {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
			if err != nil {
				failed.Store(err)
				return
			}
			acked.Add(int64(len(r.Value)))
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	elapsed := time.Since(start)
	if err := failed.Load(); err != nil {
		t.Fatalf("a record failed: %v", err)
	}
	rate := float64(acked.Load()) / elapsed.Seconds()
	t.Logf("produced %d bytes in %v: %.0f B/s against a quota of %d B/s; %d throttles", acked.Load(), elapsed, rate, quotaBytesPerSec, hook.n.Load())
	if hook.n.Load() == 0 {
		t.Fatal("never throttled")
	}
	if rate > 2*quotaBytesPerSec {
		t.Fatalf("rate %.0f B/s is over twice the quota", rate)
	}
}

// TestFranzConsumerQuota: a consumer over consumer_byte_rate is throttled
// and its rate over a few seconds stays under twice the quota; it reads
// the records in order.
func TestFranzConsumerQuota(t *testing.T) {
	b := startQuotaBroker(t)
	adm := newAdmin(t, b)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 1, nil)
	// 4 MB, more than the consumer may read in the run, in batches of at
	// most 16 KB: a fetch is bounded to what the quota allows in a window
	// (256 KB here) but always returns its first batch whole, and a
	// response over the quota is answered empty, as in Kafka.
	prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(16<<10))
	ctx := testContext(t, 90*time.Second)
	value := randomBytes(1024)
	for i := range 4096 {
		prod.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	setClientQuota(t, adm, "quota-consumer", "consumer_byte_rate", quotaBytesPerSec)

	hook := &throttleHook{}
	cl := newClient(t, b, kgo.ClientID("quota-consumer"), kgo.WithHooks(hook), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var bytes int64
	next := 0
	start := time.Now()
	for time.Since(start) < 5*time.Second {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Key) != fmt.Sprint(next) {
				t.Fatalf("record %d has key %s", next, r.Key)
			}
			next++
			bytes += int64(len(r.Value))
		})
		for _, e := range fs.Errors() {
			if e.Err != context.DeadlineExceeded {
				t.Fatalf("fetch: %v", e.Err)
			}
		}
	}
	elapsed := time.Since(start)
	rate := float64(bytes) / elapsed.Seconds()
	t.Logf("consumed %d bytes in %v: %.0f B/s against a quota of %d B/s; %d throttles", bytes, elapsed, rate, quotaBytesPerSec, hook.n.Load())
	if hook.n.Load() == 0 {
		t.Fatal("never throttled")
	}
	if bytes == 0 || rate > 2*quotaBytesPerSec {
		t.Fatalf("rate %.0f B/s: want above 0 and under twice the quota", rate)
	}
}

// TestKcatHonoursProducerQuota: librdkafka (kcat) producing, then
// consuming, over its quota is throttled, not disconnected: every record
// arrives, in order, and each takes the time the quota implies.
func TestKcatHonoursProducerQuota(t *testing.T) {
	requireTool(t, "kcat")
	b := startQuotaBroker(t)
	adm := newAdmin(t, b)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 1, nil)
	const rate = 64 << 10
	setClientQuota(t, adm, "quota-kcat", "producer_byte_rate", rate)
	var in strings.Builder
	const n = 256 // 256 KB: about 4 s at 64 KB/s, less what the window lets through at once
	for i := range n {
		fmt.Fprintf(&in, "%05d %s\n", i, strings.Repeat("k", 1018))
	}
	start := time.Now()
	// Small batches, so the records go in many requests.
	runKcat(t, in.String(), "-P", "-b", b.Addr(), "-t", topic, "-p", "0", "-X", "client.id=quota-kcat",
		"-X", "batch.size=16384", "-X", "linger.ms=1", "-X", "compression.codec=none")
	elapsed := time.Since(start)
	t.Logf("kcat produced %d KB in %v against %d KB/s", n, elapsed, rate>>10)
	if elapsed < 2*time.Second {
		t.Fatalf("kcat produced %d KB in %v: not throttled to %d KB/s", n, elapsed, rate>>10)
	}
	// Consumed under a consumer quota of the same rate: throttled too,
	// every record read.
	setClientQuota(t, adm, "quota-kcat-consumer", "consumer_byte_rate", rate)
	start = time.Now()
	out := runKcat(t, "", "-C", "-b", b.Addr(), "-t", topic, "-p", "0", "-o", "beginning", "-e", "-f", "%s\n",
		"-X", "client.id=quota-kcat-consumer")
	elapsed = time.Since(start)
	t.Logf("kcat consumed %d KB in %v against %d KB/s", n, elapsed, rate>>10)
	if elapsed < 2*time.Second {
		t.Errorf("kcat consumed %d KB in %v: not throttled to %d KB/s", n, elapsed, rate>>10)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("consumed %d records, want %d", len(lines), n)
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, fmt.Sprintf("%05d ", i)) {
			t.Fatalf("record %d is %.10q", i, l)
		}
	}
	if strings.Contains(b.Output(), "closing connection") {
		t.Errorf("the broker closed a connection:\n%s", b.Output())
	}
}
