package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRestart checks durability across a broker restart on the same data
// dir: every record acknowledged with acks=all is readable afterwards at
// its offset, new records continue the offsets without a gap, and topics
// keep their partitions and configs. Both a crash (SIGKILL) and a clean
// stop (SIGTERM) are covered.
func TestRestart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		stop func(*Broker)
	}{
		{"AfterSIGKILL", (*Broker).Kill},
		{"AfterSIGTERM", (*Broker).Stop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := StartBroker(t)
			testRestart(t, b, tc.stop)
		})
	}
}

func testRestart(t *testing.T, b *Broker, stop func(*Broker)) {
	const partitions, before, after = 3, 300, 30
	topic := uniqueTopic(t)
	createTopic(t, newAdmin(t, b), topic, partitions, map[string]*string{"retention.ms": kadm.StringPtr("86400000")})

	// Each acknowledged record, by partition and offset.
	acked := make(map[int32][]*kgo.Record)
	p := newClient(t, b, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var batch []*kgo.Record
	for i := range before {
		batch = append(batch, &kgo.Record{Topic: topic, Partition: int32(i % partitions),
			Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "before-%d", i),
			Headers: []kgo.RecordHeader{{Key: "n", Value: fmt.Appendf(nil, "%d", i)}}})
	}
	produceSync(t, p, batch...)
	for _, r := range batch {
		acked[r.Partition] = append(acked[r.Partition], r)
	}
	p.Close() // no client may hold the old connection across the restart

	stop(b)
	b.Restart()

	// Configs and partitions survived.
	adm := newAdmin(t, b)
	waitTopicPartitions(t, adm, topic, partitions)
	expectTopicConfigs(t, adm, topic, map[string]wantConfig{
		"retention.ms": {"86400000", kmsg.ConfigSourceDynamicTopicConfig},
	})

	// Every acknowledged record is there, at its acknowledged offset.
	offsets := map[int32]kgo.Offset{}
	for part := range int32(partitions) {
		offsets[part] = kgo.NewOffset().AtStart()
	}
	c := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	got := consume(t, c, before, 30*time.Second)
	byPos := map[[2]int64]*kgo.Record{}
	for _, r := range got {
		byPos[[2]int64{int64(r.Partition), r.Offset}] = r
	}
	for part, rs := range acked {
		for _, want := range rs {
			r, ok := byPos[[2]int64{int64(part), want.Offset}]
			if !ok {
				t.Fatalf("acknowledged record %s at %d@%d lost in the restart", want.Value, part, want.Offset)
			}
			if string(r.Key) != string(want.Key) || string(r.Value) != string(want.Value) ||
				len(r.Headers) != 1 || string(r.Headers[0].Value) != string(want.Headers[0].Value) {
				t.Fatalf("at %d@%d after restart: %s=%s %v, want %s=%s %v", part, want.Offset, r.Key, r.Value, r.Headers, want.Key, want.Value, want.Headers)
			}
		}
	}

	// New records continue each partition's offsets without a gap.
	ctx := testContext(t, 30*time.Second)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	p2 := newClient(t, b, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var more []*kgo.Record
	for i := range after {
		more = append(more, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: fmt.Appendf(nil, "after-%d", i)})
	}
	produceSync(t, p2, more...)
	next := map[int32]int64{}
	for part, rs := range acked {
		next[part] = int64(len(rs))
		if o, _ := ends.Lookup(topic, part); o.Offset != int64(len(rs)) {
			t.Fatalf("partition %d: end offset %d after restart, want %d", part, o.Offset, len(rs))
		}
	}
	for _, r := range more {
		if r.Offset != next[r.Partition] {
			t.Fatalf("partition %d: record after restart at offset %d, want %d (no gap, no reuse)", r.Partition, r.Offset, next[r.Partition])
		}
		next[r.Partition]++
	}
}
