package compat

// KIP-848 consumer groups end to end: franz-go's next-gen consumer
// (kgo.ServerSideBalancer) drives ConsumerGroupHeartbeat, the server-side
// assignors, and OffsetCommit/OffsetFetch with member epochs.

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeConsumerGroup sends a ConsumerGroupDescribe through cl.
func describeConsumerGroup(ctx context.Context, cl *kgo.Client, group string) (kmsg.ConsumerGroupDescribeResponseGroup, error) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, err
	}
	return resp.Groups[0], nil
}

func TestKIP848ConsumersShareTopicExactlyOnce(t *testing.T) {
	skipOnKfake(t, "kfake's KIP-848 support is not what this tests")
	b := StartBroker(t, append(groupBrokerOptions, WithOverride("group.consumer.heartbeat.interval.ms", "200"))...)
	adm := newAdmin(t, b)
	const topic, group, partitions = "kip848", "kip848-group", 6
	createTopic(t, adm, topic, partitions, nil)

	next := []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer())}
	var members []*groupMember
	for range 3 {
		members = append(members, startGroupMember(t, b, group, topic, next...))
	}
	defer func() {
		for _, m := range members {
			m.close()
		}
	}()
	probe := newClient(t, b)
	eventually(t, 40*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		g, err := describeConsumerGroup(ctx, probe, group)
		if err != nil {
			return err
		}
		if g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != 3 {
			return fmt.Errorf("group: error %d, state %s, %d members", g.ErrorCode, g.State, len(g.Members))
		}
		total := 0
		for _, m := range g.Members {
			for _, tp := range m.Assignment.TopicPartitions {
				total += len(tp.Partitions)
			}
			if len(m.Assignment.TopicPartitions) != 1 || len(m.Assignment.TopicPartitions[0].Partitions) != 2 {
				return fmt.Errorf("member %s owns %+v, want 2 partitions", m.MemberID, m.Assignment.TopicPartitions)
			}
		}
		if total != partitions {
			return fmt.Errorf("%d partitions assigned", total)
		}
		return nil
	})

	const n = 300
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte(strconv.Itoa(i))})
	}
	produceSync(t, newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner())), rs...)

	eventually(t, 30*time.Second, func() error {
		seen := map[string]int{}
		for _, m := range members {
			for _, r := range m.records() {
				seen[string(r.Value)]++
			}
		}
		for v, c := range seen {
			if c != 1 {
				t.Fatalf("record %s consumed %d times", v, c)
			}
		}
		if len(seen) != n {
			return fmt.Errorf("%d of %d records consumed", len(seen), n)
		}
		return nil
	})

	// Committed offsets (OffsetCommit v9 with member epochs) reach the
	// end of every partition.
	eventually(t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return err
		}
		for p := range int32(partitions) {
			o, ok := offs.Lookup(topic, p)
			if !ok || o.At != n/partitions {
				return fmt.Errorf("partition %d committed %+v", p, o)
			}
		}
		return nil
	})

	// A member leaves: the others take its partitions over.
	members[2].close()
	members = members[:2]
	eventually(t, 40*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		g, err := describeConsumerGroup(ctx, probe, group)
		if err != nil {
			return err
		}
		if g.State != "Stable" || len(g.Members) != 2 {
			return fmt.Errorf("group: state %s, %d members", g.State, len(g.Members))
		}
		return nil
	})
}
