package compat

// KIP-848 regex subscriptions resolved by the broker: franz-go's regex
// consumer on the consumer protocol sends SubscribedTopicRegex, and the
// coordinator assigns topics created after the group started.

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestKIP848RegexSubscriptionPicksUpNewTopics(t *testing.T) {
	skipOnKfake(t, "kfake's KIP-848 regex resolution is not what this tests")
	b := StartBroker(t, append(groupBrokerOptions, WithOverride("group.consumer.heartbeat.interval.ms", "200"))...)
	adm := newAdmin(t, b)
	const group = "kip848-regex"
	createTopic(t, adm, "rx-first", 2, nil)
	createTopic(t, adm, "other", 1, nil)

	m := startGroupMember(t, b, group, "rx-.*", kgo.ConsumeRegex(), kgo.ServerSideBalancer(),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.MetadataMaxAge(time.Second))
	defer m.close()
	probe := newClient(t, b)

	produce := func(topic string, n int) {
		var rs []*kgo.Record
		for i := range n {
			rs = append(rs, &kgo.Record{Topic: topic, Value: []byte(topic + "/" + strconv.Itoa(i))})
		}
		produceSync(t, newClient(t, b), rs...)
	}
	produce("rx-first", 10)
	produce("other", 5)
	// The topic appears after the group started: the broker resolves
	// the regex again and the member is assigned it.
	createTopic(t, adm, "rx-second", 3, nil)
	produce("rx-second", 10)

	eventually(t, 40*time.Second, func() error {
		seen := map[string]int{}
		for _, r := range m.records() {
			seen[r.Topic]++
		}
		if seen["other"] != 0 {
			t.Fatalf("consumed %d records of a topic the regex does not match", seen["other"])
		}
		if seen["rx-first"] != 10 || seen["rx-second"] != 10 {
			return fmt.Errorf("consumed %v", seen)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g, err := describeConsumerGroup(ctx, probe, group)
	if err != nil || g.ErrorCode != 0 || len(g.Members) != 1 || g.Members[0].SubscribedTopicRegex == nil {
		t.Fatalf("describe: %+v, %v", g, err)
	}
}

// With group.coordinator.rebalance.protocols=classic the broker does not
// advertise ConsumerGroupHeartbeat, so a franz-go consumer asking for the
// consumer protocol falls back to the classic one and still consumes.
func TestKIP848DisabledFallsBackToClassic(t *testing.T) {
	skipOnKfake(t, "kfake has no group.coordinator.rebalance.protocols")
	b := StartBroker(t, append(groupBrokerOptions, WithOverride("group.coordinator.rebalance.protocols", "classic"))...)
	adm := newAdmin(t, b)
	const topic, group = "classic-only", "classic-only-group"
	createTopic(t, adm, topic, 2, nil)
	m := startGroupMember(t, b, group, topic, kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()))
	defer m.close()
	var rs []*kgo.Record
	for i := range 20 {
		rs = append(rs, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))})
	}
	produceSync(t, newClient(t, b), rs...)
	eventually(t, 40*time.Second, func() error {
		if n := len(m.records()); n != 20 {
			return fmt.Errorf("consumed %d of 20", n)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil || ds[group].Err != nil || ds[group].ProtocolType != "consumer" || len(ds[group].Members) != 1 {
		t.Fatalf("the group is not a classic group with one member: %+v %v", ds[group], err)
	}
}
