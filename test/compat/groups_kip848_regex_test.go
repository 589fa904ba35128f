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
