package compat

// KIP-848 online migration under load with franz-go: a group of classic
// cooperative-sticky consumers is upgraded member by member to the consumer
// protocol, then downgraded back, while a producer writes a known sequence.
// Consumers process a poll's records before committing them, commit on
// revocation, and hold rebalances while processing (kgo.BlockRebalanceOnPoll),
// so every produced record must be consumed and none twice.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ledger counts how often each produced value was consumed.
type ledger struct {
	mu   sync.Mutex
	seen map[string]int
}

func (l *ledger) add(rs []*kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range rs {
		l.seen[string(r.Value)]++
	}
}

// check returns how many of n values were consumed and how many
// consumptions beyond the first there were.
func (l *ledger) check(n int) (consumed, duplicates int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range n {
		if c := l.seen[strconv.Itoa(i)]; c > 0 {
			consumed++
			duplicates += c - 1
		}
	}
	return consumed, duplicates
}

// migratingMember is one consumer of the group: it processes (records
// into the ledger) then commits, and leaves on stop.
type migratingMember struct {
	cl   *kgo.Client
	stop chan struct{}
	done chan struct{}
}

func startMigratingMember(t *testing.T, b *Broker, group, topic string, l *ledger, consumerProtocol bool) *migratingMember {
	t.Helper()
	opts := []kgo.Opt{
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.RebalanceTimeout(10 * time.Second),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				t.Logf("commit on revocation: %v", err)
			}
		}),
	}
	if consumerProtocol {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	m := &migratingMember{cl: newClient(t, b, opts...), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			select {
			case <-m.stop:
				// Everything processed is committed: leave.
				m.cl.Close()
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			fs := m.cl.PollFetches(ctx)
			cancel()
			if fs.IsClientClosed() {
				return
			}
			if rs := fs.Records(); len(rs) > 0 {
				l.add(rs)
				cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := m.cl.CommitUncommittedOffsets(cctx); err != nil {
					t.Logf("commit: %v", err)
				}
				ccancel()
			}
			m.cl.AllowRebalance()
		}
	}()
	return m
}

func (m *migratingMember) close() {
	close(m.stop)
	<-m.done
}

func TestKIP848OnlineMigrationUnderLoad(t *testing.T) {
	skipOnKfake(t, "kfake does not migrate groups between protocols")
	b := StartBroker(t, append(groupBrokerOptions,
		WithOverride("group.consumer.heartbeat.interval.ms", "200"),
		WithOverride("group.consumer.migration.policy", "bidirectional"))...)
	adm := newAdmin(t, b)
	const topic, group, partitions, size = "migration", "migration-group", 6, 3
	createTopic(t, adm, topic, partitions, nil)
	probe := newClient(t, b)
	l := &ledger{seen: map[string]int{}}

	// The producer writes 0, 1, 2, ... until told to stop.
	stopProducing := make(chan struct{})
	produced := make(chan int, 1)
	go func() {
		cl := newClient(t, b, kgo.ProducerLinger(5*time.Millisecond), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		n := 0
		for {
			select {
			case <-stopProducing:
				if err := cl.Flush(context.Background()); err != nil {
					t.Errorf("flush: %v", err)
				}
				produced <- n
				return
			case <-time.After(10 * time.Millisecond):
			}
			for range 10 {
				cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(n))}, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Errorf("produce: %v", err)
					}
				})
				n++
			}
		}
	}()

	// classicStable waits for a Stable classic group of n members.
	classicStable := func(n int) {
		t.Helper()
		eventually(t, 60*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ds, err := adm.DescribeGroups(ctx, group)
			if err != nil {
				return err
			}
			d := ds[group]
			if d.Err != nil || d.State != "Stable" || len(d.Members) != n {
				return fmt.Errorf("classic group: %v, %s, %d members", d.Err, d.State, len(d.Members))
			}
			return nil
		})
	}
	// consumerStable waits for a Stable consumer group with the given
	// numbers of classic and consumer-protocol members, each owning some
	// partition.
	consumerStable := func(classic, consumer int) {
		t.Helper()
		eventually(t, 60*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			g, err := describeConsumerGroup(ctx, probe, group)
			if err != nil {
				return err
			}
			if g.ErrorCode != 0 || g.State != "Stable" {
				return fmt.Errorf("consumer group: error %d, state %s", g.ErrorCode, g.State)
			}
			types := map[int8]int{}
			for _, m := range g.Members {
				types[m.MemberType]++
				if len(m.Assignment.TopicPartitions) == 0 {
					return fmt.Errorf("member %s owns nothing yet", m.MemberID)
				}
			}
			if types[0] != classic || types[1] != consumer {
				return fmt.Errorf("consumer group members by type %v, want %d classic and %d consumer", types, classic, consumer)
			}
			return nil
		})
	}

	var classics, consumers []*migratingMember
	for range size {
		classics = append(classics, startMigratingMember(t, b, group, topic, l, false))
	}
	classicStable(size)

	// Upgrade: each classic member is replaced by a consumer-protocol one.
	for i := range size {
		consumers = append(consumers, startMigratingMember(t, b, group, topic, l, true))
		consumerStable(size-i, i+1)
		classics[i].close()
		if i < size-1 {
			consumerStable(size-i-1, i+1)
		}
	}
	consumerStable(0, size)

	// Downgrade: back to classic members, one by one; the last
	// consumer-protocol member leaving turns the group classic again.
	classics = nil
	for i := range size {
		classics = append(classics, startMigratingMember(t, b, group, topic, l, false))
		consumerStable(i+1, size-i)
		consumers[i].close()
		if i < size-1 {
			consumerStable(i+1, size-i-1)
		}
	}
	classicStable(size)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if g, err := describeConsumerGroup(ctx, probe, group); err != nil || g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("after the downgrade ConsumerGroupDescribe answers %+v, %v; want GROUP_ID_NOT_FOUND", g, err)
	}

	close(stopProducing)
	n := <-produced
	eventually(t, 60*time.Second, func() error {
		if got, _ := l.check(n); got != n {
			return fmt.Errorf("%d of %d records consumed", got, n)
		}
		return nil
	})
	for _, m := range classics {
		m.close()
	}
	got, dups := l.check(n)
	t.Logf("%d records produced, %d consumed, %d consumed twice", n, got, dups)
	if dups != 0 {
		t.Errorf("%d records consumed more than once", dups)
	}
	// The group's committed offsets reach the end of every partition.
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(e kadm.ListedOffset) {
		if e.Err != nil {
			t.Errorf("partition %d: end offset: %v", e.Partition, e.Err)
		}
		if o, ok := offs.Lookup(topic, e.Partition); !ok || o.Err != nil || o.At != e.Offset {
			t.Errorf("partition %d: committed %+v (found %v), end %d", e.Partition, o, ok, e.Offset)
		}
	})
}

// Classic consumers of other clients in a KIP-848 consumer group: a
// librdkafka cooperative-sticky consumer and a kafka-python eager (range)
// one each join a group of franz-go consumer-protocol members, take a share
// of the partitions through JoinGroup and SyncGroup, and leave; records
// produced throughout are all consumed, none twice.
func TestKIP848ClassicClientsInConsumerGroup(t *testing.T) {
	skipOnKfake(t, "kfake does not serve classic members in consumer groups")
	for _, tc := range []struct{ name, module, pkg, script string }{
		{"librdkafka", "confluent_kafka", "python3-confluent-kafka", "groups_librdkafka_migration.py"},
		{"kafka-python", "kafka", "python3-kafka", "groups_kafka_python_migration.py"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requirePythonModule(t, tc.module, tc.pkg)
			classicClientInConsumerGroup(t, tc.script)
		})
	}
}

func classicClientInConsumerGroup(t *testing.T, script string) {
	b := StartBroker(t, append(groupBrokerOptions, WithOverride("group.consumer.heartbeat.interval.ms", "200"))...)
	adm := newAdmin(t, b)
	const topic, group, partitions = "migration-classic-client", "migration-classic-client-group", 4
	createTopic(t, adm, topic, partitions, nil)
	l := &ledger{seen: map[string]int{}}
	m := startMigratingMember(t, b, group, topic, l, true)
	defer m.close()

	stop := make(chan struct{})
	produced := make(chan int, 1)
	go func() {
		cl := newClient(t, b, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		n := 0
		for {
			select {
			case <-stop:
				if err := cl.Flush(context.Background()); err != nil {
					t.Errorf("flush: %v", err)
				}
				produced <- n
				return
			case <-time.After(20 * time.Millisecond):
			}
			for range 4 {
				cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(n))}, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Errorf("produce: %v", err)
					}
				})
				n++
			}
		}
	}()

	var res struct {
		Values []string `json:"values"`
		Owned  []int32  `json:"owned"`
	}
	runPythonScript(t, 90*time.Second, &res, script, b.Addr(), topic, group, "4")
	close(stop)
	n := <-produced
	if len(res.Owned) == 0 || len(res.Values) == 0 {
		t.Fatalf("the classic member owned %v and consumed %d records", res.Owned, len(res.Values))
	}
	l.mu.Lock()
	for _, v := range res.Values {
		l.seen[v]++
	}
	l.mu.Unlock()
	eventually(t, 60*time.Second, func() error {
		if got, _ := l.check(n); got != n {
			return fmt.Errorf("%d of %d records consumed", got, n)
		}
		return nil
	})
	got, dups := l.check(n)
	t.Logf("%d records produced, %d consumed (%d by the classic member, owning %v), %d consumed twice", n, got, len(res.Values), res.Owned, dups)
	if dups != 0 {
		t.Errorf("%d records consumed more than once", dups)
	}
}
