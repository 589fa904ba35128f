package mirror

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/poll"
)

// produce writes n records per partition of topic, keyed "<topic>-<p>-<i>",
// with a header, lz4-compressed batches.
func produce(t testing.TB, addr, topic string, partitions int32, from, n int) {
	t.Helper()
	cl := clientOf(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	var recs []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := from; i < from+n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p,
				Key: []byte(fmt.Sprintf("%s-%d-%d", topic, p, i)), Value: []byte(strings.Repeat("v", 100)),
				Headers: []kgo.RecordHeader{{Key: "seq", Value: []byte(strconv.Itoa(i))}}})
		}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// checkOrdered checks that the records of each partition of a remote topic
// are those produced, in order, with their header and timestamp.
func checkOrdered(t testing.TB, recs []*kgo.Record, topic string, partitions int32, n int) {
	t.Helper()
	next := map[int32]int{}
	for _, r := range recs {
		want := fmt.Sprintf("%s-%d-%d", topic, r.Partition, next[r.Partition])
		if string(r.Key) != want {
			t.Fatalf("%s[%d] offset %d: key %q, want %q", r.Topic, r.Partition, r.Offset, r.Key, want)
		}
		if len(r.Headers) != 1 || r.Headers[0].Key != "seq" || string(r.Headers[0].Value) != strconv.Itoa(next[r.Partition]) {
			t.Fatalf("%s[%d]: headers %v", r.Topic, r.Partition, r.Headers)
		}
		if r.Timestamp.IsZero() || time.Since(r.Timestamp) > 10*time.Minute {
			t.Fatalf("timestamp %v not kept", r.Timestamp)
		}
		next[r.Partition]++
	}
	for p := int32(0); p < partitions; p++ {
		if next[p] != n {
			t.Fatalf("%s[%d]: %d records, want %d", topic, p, next[p], n)
		}
	}
}

func topicConfig(t testing.TB, addr, topic, key string) string {
	rc, err := admin(t, addr).DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		return ""
	}
	for _, r := range rc {
		for _, c := range r.Configs {
			if c.Key == key && c.Value != nil {
				return *c.Value
			}
		}
	}
	return ""
}

func partitionCount(t testing.TB, addr, topic string) int {
	td, err := admin(t, addr).ListTopics(context.Background(), topic)
	if err != nil || td[topic].Err != nil {
		return 0
	}
	return len(td[topic].Partitions)
}

// TestMirrorAToB mirrors three topics and checks records, naming, configs,
// new partitions, new topics, and a consumer group's failover to B.
func TestMirrorAToB(t *testing.T) {
	a, b := startCluster(t, "A"), startCluster(t, "B")
	createTopic(t, a.addr, "orders", 3, map[string]*string{"retention.ms": ptr("3600000")})
	createTopic(t, a.addr, "payments", 1, nil)
	createTopic(t, a.addr, "audit", 2, nil)
	produce(t, a.addr, "orders", 3, 0, 200)
	produce(t, a.addr, "payments", 1, 0, 200)
	produce(t, a.addr, "audit", 2, 0, 200)

	m, cfg := startMirror(t, mm2Props(a.addr, b.addr, "A->B.enabled = true", "A->B.topics = orders, payments, audit, late.*",
		"sync.group.offsets.enabled = true", "sync.group.offsets.interval.seconds = 1", "offset.lag.max = 10"))

	for _, c := range []struct {
		topic string
		parts int32
	}{{"orders", 3}, {"payments", 1}, {"audit", 2}} {
		recs := readAll(t, b.addr, "A."+c.topic, int(c.parts)*200)
		checkOrdered(t, recs, c.topic, c.parts, 200)
	}
	if got := topicConfig(t, b.addr, "A.orders", "retention.ms"); got != "3600000" {
		t.Fatalf("A.orders retention.ms %q at creation", got)
	}

	// kcat on B reads the remote topic.
	out, err := exec.Command("kcat", "-C", "-b", b.addr, "-t", "A.payments", "-e", "-o", "beginning", "-f", "%k\n").Output()
	if err != nil {
		t.Fatalf("kcat: %v", err)
	}
	if n := strings.Count(string(out), "\n"); n != 200 {
		t.Fatalf("kcat read %d records of A.payments, want 200", n)
	}

	// A config change, a new partition and a new topic on A reach B.
	if _, err := admin(t, a.addr).AlterTopicConfigs(context.Background(), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: ptr("7200000")}}, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin(t, a.addr).UpdatePartitions(context.Background(), 3, "payments"); err != nil {
		t.Fatal(err)
	}
	createTopic(t, a.addr, "late-topic", 1, nil)
	produce(t, a.addr, "late-topic", 1, 0, 50)
	poll.Until(t, mirrorTimeout, "the config change on B", func() error {
		if got := topicConfig(t, b.addr, "A.orders", "retention.ms"); got != "7200000" {
			return fmt.Errorf("retention.ms %q", got)
		}
		return nil
	})
	poll.Until(t, mirrorTimeout, "the new partitions on B", func() error {
		if n := partitionCount(t, b.addr, "A.payments"); n != 3 {
			return fmt.Errorf("%d partitions", n)
		}
		return nil
	})
	cl := clientOf(t, a.addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "payments", Partition: 2, Key: []byte("new-partition")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, mirrorTimeout, "the record of the new partition on B", func() error {
		end, err := admin(t, b.addr).ListEndOffsets(context.Background(), "A.payments")
		if err != nil {
			return err
		}
		if o, _ := end.Lookup("A.payments", 2); o.Offset != 1 {
			return fmt.Errorf("end offset %d", o.Offset)
		}
		return nil
	})
	checkOrdered(t, readAll(t, b.addr, "A.late-topic", 50), "late-topic", 1, 50)

	// Failover: a group reads half of orders on A and commits.
	group := "billing"
	gc := clientOf(t, a.addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(), kgo.FetchMaxBytes(1))
	consumed := map[int32]int64{}
	deadline := time.Now().Add(mirrorTimeout)
	for total := 0; total < 300 && time.Now().Before(deadline); {
		fs := gc.PollRecords(context.Background(), 300-total)
		for _, r := range fs.Records() {
			if r.Offset+1 > consumed[r.Partition] {
				consumed[r.Partition] = r.Offset + 1
			}
			total++
		}
	}
	if err := gc.CommitUncommittedOffsets(context.Background()); err != nil {
		t.Fatal(err)
	}
	gc.Close()
	committed, err := admin(t, a.addr).FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}

	// translate-offsets prints the target offsets from the checkpoints.
	var translated map[int32]int64
	poll.Until(t, mirrorTimeout, "checkpoints of the group", func() error {
		out, err := run(t, "mirror", "translate-offsets", "--config", cfg, "--group", group, "--source", "A", "--target", "B")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		translated = map[int32]int64{}
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) == 3 && f[0] == "A.orders" {
				p, _ := strconv.Atoi(f[1])
				o, _ := strconv.ParseInt(f[2], 10, 64)
				translated[int32(p)] = o
			}
		}
		for p := int32(0); p < 3; p++ {
			c, _ := committed.Lookup("orders", p)
			if c.At <= 0 {
				continue
			}
			tr, ok := translated[p]
			if !ok || tr > c.At || c.At-tr >= 10 {
				return fmt.Errorf("partition %d: committed %d on A, translated %d (%v)", p, c.At, tr, ok)
			}
		}
		return nil
	})
	// The synced group offsets on B are the translated ones.
	poll.Until(t, mirrorTimeout, "the group's offsets synced to B", func() error {
		got, err := admin(t, b.addr).FetchOffsets(context.Background(), group)
		if err != nil {
			return err
		}
		for p, tr := range translated {
			if o, ok := got.Lookup("A.orders", p); !ok || o.At != tr {
				return fmt.Errorf("partition %d: B has %d, translated %d", p, o.At, tr)
			}
		}
		return nil
	})

	// kafka-python resumes the group on B: nothing lost, fewer than
	// offset.lag.max re-read per partition.
	script := `
import sys, collections
from kafka import KafkaConsumer
c = KafkaConsumer("A.orders", bootstrap_servers=sys.argv[1], group_id=sys.argv[2], auto_offset_reset="earliest",
                  enable_auto_commit=False, consumer_timeout_ms=15000)
first = {}
count = collections.Counter()
for m in c:
    first.setdefault(m.partition, m.offset)
    count[m.partition] += 1
for p in sorted(count):
    print(p, first[p], count[p])
`
	pout, err := exec.Command("/usr/bin/python3", "-c", script, b.addr, group).CombinedOutput()
	if err != nil {
		t.Fatalf("kafka-python: %v\n%s", err, pout)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(pout)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		p, _ := strconv.Atoi(f[0])
		first, _ := strconv.ParseInt(f[1], 10, 64)
		count, _ := strconv.Atoi(f[2])
		c, _ := committed.Lookup("orders", int32(p))
		if first != translated[int32(p)] {
			t.Errorf("partition %d: resumed at %d, translated %d", p, first, translated[int32(p)])
		}
		if first > c.At {
			t.Errorf("partition %d: resumed at %d past the committed %d: records lost", p, first, c.At)
		}
		if int64(count) != 200-first {
			t.Errorf("partition %d: read %d records from %d, want %d", p, count, first, 200-first)
		}
	}

	// status shows the flow with no lag.
	poll.Until(t, mirrorTimeout, "status with no lag", func() error {
		out, err := run(t, "mirror", "status", "--config", cfg)
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) == 8 && f[0] == "A->B" && f[6] != "0" {
				return fmt.Errorf("lag: %s", line)
			}
		}
		if !strings.Contains(out, "A.orders") {
			return fmt.Errorf("no A.orders in status:\n%s", out)
		}
		return nil
	})
	if !m.running() {
		t.Fatal("mirror exited")
	}
}
