package rules

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// newTestController opens a LocalLog in a temp dir and registers brokers
// 0..brokers-1.
func newTestController(t *testing.T, brokers int, cfg ControllerConfig) (*Controller, *metadata.LocalLog) {
	t.Helper()
	l := openTestLog(t, t.TempDir(), metadata.LocalLogOptions{})
	t.Cleanup(func() { l.Close() })
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewPCG(1, 2))
	}
	c := NewController(l, cfg)
	for id := range brokers {
		reg := metadata.RegisterBrokerRecord{BrokerID: int32(id), IncarnationID: metadata.NewUuid(),
			Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "localhost", Port: int32(9092 + id)}}}
		if err := c.RegisterBroker(context.Background(), reg); err != nil {
			t.Fatal(err)
		}
	}
	return c, l
}

func createOne(t *testing.T, c *Controller, ct CreateTopic) CreateTopicResult {
	t.Helper()
	res := c.CreateTopics(context.Background(), []CreateTopic{ct}, false)
	if len(res) != 1 {
		t.Fatalf("%d results", len(res))
	}
	return res[0]
}

func wantKafkaError(t *testing.T, err error, want *kerr.Error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %s", err, want.Message)
	}
}

func TestCreateTopicsRules(t *testing.T) {
	long := strings.Repeat("a", 250)
	for _, tc := range []struct {
		name     string
		existing []string
		topic    CreateTopic
		want     *kerr.Error
		wantMsg  string
	}{
		{name: "defaults", topic: CreateTopic{Name: "ok", NumPartitions: -1, ReplicationFactor: -1}},
		{name: "explicit", topic: CreateTopic{Name: "ok", NumPartitions: 4, ReplicationFactor: 3}},
		{name: "max length name", topic: CreateTopic{Name: long[:249], NumPartitions: 1, ReplicationFactor: 1}},
		{name: "empty name", topic: CreateTopic{Name: "", NumPartitions: 1, ReplicationFactor: 1}, want: kerr.InvalidTopicException},
		{name: "dot", topic: CreateTopic{Name: ".", NumPartitions: 1, ReplicationFactor: 1}, want: kerr.InvalidTopicException},
		{name: "dot dot", topic: CreateTopic{Name: "..", NumPartitions: 1, ReplicationFactor: 1}, want: kerr.InvalidTopicException},
		{name: "too long", topic: CreateTopic{Name: long, NumPartitions: 1, ReplicationFactor: 1}, want: kerr.InvalidTopicException},
		{name: "illegal char", topic: CreateTopic{Name: "a/b", NumPartitions: 1, ReplicationFactor: 1}, want: kerr.InvalidTopicException},
		{name: "space", topic: CreateTopic{Name: "a b", NumPartitions: 1, ReplicationFactor: 1}, want: kerr.InvalidTopicException},
		{name: "exists", existing: []string{"x"}, topic: CreateTopic{Name: "x", NumPartitions: 1, ReplicationFactor: 1},
			want: kerr.TopicAlreadyExists, wantMsg: "Topic 'x' already exists."},
		{name: "dot collides with underscore", existing: []string{"a_b"}, topic: CreateTopic{Name: "a.b", NumPartitions: 1, ReplicationFactor: 1},
			want: kerr.InvalidTopicException, wantMsg: "collides with existing topic: a_b"},
		{name: "underscore collides with dot", existing: []string{"a.b"}, topic: CreateTopic{Name: "a_b", NumPartitions: 1, ReplicationFactor: 1},
			want: kerr.InvalidTopicException},
		{name: "zero partitions", topic: CreateTopic{Name: "p", NumPartitions: 0, ReplicationFactor: 1}, want: kerr.InvalidPartitions},
		{name: "negative partitions", topic: CreateTopic{Name: "p", NumPartitions: -2, ReplicationFactor: 1}, want: kerr.InvalidPartitions},
		{name: "zero replication", topic: CreateTopic{Name: "r", NumPartitions: 1, ReplicationFactor: 0}, want: kerr.InvalidReplicationFactor},
		{name: "negative replication", topic: CreateTopic{Name: "r", NumPartitions: 1, ReplicationFactor: -3}, want: kerr.InvalidReplicationFactor},
		{name: "replication above brokers", topic: CreateTopic{Name: "r", NumPartitions: 1, ReplicationFactor: 4},
			want: kerr.InvalidReplicationFactor, wantMsg: "only 3 broker(s) are registered"},
		{name: "assignment ok", topic: CreateTopic{Name: "m", NumPartitions: -1, ReplicationFactor: -1,
			Assignment: map[int32][]int32{0: {2, 0}, 1: {0, 1}}}},
		{name: "assignment with partitions", topic: CreateTopic{Name: "m", NumPartitions: 2, ReplicationFactor: -1,
			Assignment: map[int32][]int32{0: {0}, 1: {1}}}, want: kerr.InvalidRequest},
		{name: "assignment with replication", topic: CreateTopic{Name: "m", NumPartitions: -1, ReplicationFactor: 1,
			Assignment: map[int32][]int32{0: {0}}}, want: kerr.InvalidRequest},
		{name: "assignment gap", topic: CreateTopic{Name: "m", NumPartitions: -1, ReplicationFactor: -1,
			Assignment: map[int32][]int32{0: {0}, 2: {1}}}, want: kerr.InvalidReplicaAssignment},
		{name: "assignment negative partition", topic: CreateTopic{Name: "m", NumPartitions: -1, ReplicationFactor: -1,
			Assignment: map[int32][]int32{-1: {0}}}, want: kerr.InvalidReplicaAssignment},
		{name: "assignment duplicate broker", topic: CreateTopic{Name: "m", NumPartitions: -1, ReplicationFactor: -1,
			Assignment: map[int32][]int32{0: {1, 1}}}, want: kerr.InvalidReplicaAssignment},
		{name: "assignment unknown broker", topic: CreateTopic{Name: "m", NumPartitions: -1, ReplicationFactor: -1,
			Assignment: map[int32][]int32{0: {7}}}, want: kerr.InvalidReplicaAssignment},
		{name: "assignment empty replicas", topic: CreateTopic{Name: "m", NumPartitions: -1, ReplicationFactor: -1,
			Assignment: map[int32][]int32{0: {}}}, want: kerr.InvalidReplicaAssignment},
		{name: "assignment uneven replication", topic: CreateTopic{Name: "m", NumPartitions: -1, ReplicationFactor: -1,
			Assignment: map[int32][]int32{0: {0, 1}, 1: {2}}}, want: kerr.InvalidReplicaAssignment},
		{name: "valid config", topic: CreateTopic{Name: "c", NumPartitions: 1, ReplicationFactor: 1,
			Configs: map[string]*string{"retention.ms": metadata.StringPtr("100")}}},
		{name: "config rejected by hook", topic: CreateTopic{Name: "c", NumPartitions: 1, ReplicationFactor: 1,
			Configs: map[string]*string{"retention.ms": metadata.StringPtr("soon")}}, want: kerr.InvalidConfig},
		{name: "null config value", topic: CreateTopic{Name: "c", NumPartitions: 1, ReplicationFactor: 1,
			Configs: map[string]*string{"retention.ms": nil}}, want: kerr.InvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTestController(t, 3, ControllerConfig{
				DefaultNumPartitions: 2, DefaultReplicationFactor: 2,
				ValidateTopicConfigs: func(cfg map[string]string) error {
					if v, ok := cfg["retention.ms"]; ok && v == "soon" {
						return fmt.Errorf("Invalid value soon for configuration retention.ms")
					}
					return nil
				},
			})
			for _, name := range tc.existing {
				wantKafkaError(t, createOne(t, c, CreateTopic{Name: name, NumPartitions: 1, ReplicationFactor: 1}).Err, nil)
			}
			before := c.Image().NumTopics()
			res := createOne(t, c, tc.topic)
			wantKafkaError(t, res.Err, tc.want)
			if tc.wantMsg != "" && !strings.Contains(res.Err.Error(), tc.wantMsg) {
				t.Fatalf("message %q lacks %q", res.Err, tc.wantMsg)
			}
			img := c.Image()
			if tc.want != nil {
				if img.NumTopics() != before {
					t.Fatal("failed create changed the image")
				}
				return
			}
			top := mustTopic(t, img, tc.topic.Name)
			if top.ID != res.TopicID || res.TopicID.IsReserved() {
				t.Fatalf("result id %v, image id %v", res.TopicID, top.ID)
			}
			if int(res.NumPartitions) != len(top.Partitions) {
				t.Fatalf("result says %d partitions, image has %d", res.NumPartitions, len(top.Partitions))
			}
			for _, p := range top.Partitions {
				if len(p.Replicas) != int(res.ReplicationFactor) || p.Leader != p.Replicas[0] ||
					!reflect.DeepEqual(p.ISR, p.Replicas) || p.LeaderEpoch != 0 {
					t.Fatalf("partition %+v", p)
				}
				if a := tc.topic.Assignment; a != nil && !reflect.DeepEqual(p.Replicas, a[p.Partition]) {
					t.Fatalf("partition %d replicas %v, asked %v", p.Partition, p.Replicas, a[p.Partition])
				}
			}
			if tc.topic.NumPartitions == -1 && tc.topic.Assignment == nil && (res.NumPartitions != 2 || res.ReplicationFactor != 2) {
				t.Fatalf("defaults not applied: %+v", res)
			}
			for k, v := range tc.topic.Configs {
				if img.TopicConfig(tc.topic.Name)[k] != *v {
					t.Fatalf("config %s not stored: %v", k, img.TopicConfig(tc.topic.Name))
				}
			}
		})
	}
}

func TestCreateTopicsWithinOneRequest(t *testing.T) {
	c, _ := newTestController(t, 1, ControllerConfig{})
	res := c.CreateTopics(context.Background(), []CreateTopic{
		{Name: "dup", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "fine", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "dup", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "fi.ne", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "fi_ne", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "bad!", NumPartitions: 1, ReplicationFactor: 1},
	}, false)
	want := []*kerr.Error{kerr.InvalidRequest, nil, kerr.InvalidRequest, nil, kerr.InvalidTopicException, kerr.InvalidTopicException}
	for i, w := range want {
		if w == nil && res[i].Err != nil || w != nil && !errors.Is(res[i].Err, w) {
			t.Errorf("topic %d (%s): got %v, want %v", i, res[i].Name, res[i].Err, w)
		}
	}
	names := []string{}
	for _, tp := range c.Image().Topics() {
		names = append(names, tp.Name)
	}
	if !reflect.DeepEqual(names, []string{"fi.ne", "fine"}) {
		t.Fatalf("created %v", names)
	}
}

func TestCreateTopicsValidateOnlyCreatesNothing(t *testing.T) {
	c, l := newTestController(t, 3, ControllerConfig{})
	offset := l.Image().Offset()
	res := c.CreateTopics(context.Background(), []CreateTopic{
		{Name: "v", NumPartitions: 6, ReplicationFactor: 3},
		{Name: "bad", NumPartitions: 0, ReplicationFactor: 3},
	}, true)
	if res[0].Err != nil || res[0].NumPartitions != 6 || res[0].ReplicationFactor != 3 {
		t.Fatalf("validate-only result %+v", res[0])
	}
	wantKafkaError(t, res[1].Err, kerr.InvalidPartitions)
	if l.Image().Offset() != offset || l.Image().NumTopics() != 0 {
		t.Fatal("validate-only committed records")
	}
}

func TestCreateTopicsConcurrentSameNameOneWins(t *testing.T) {
	c, _ := newTestController(t, 1, ControllerConfig{})
	const n = 16
	var wins, exists atomic.Int32
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := createOne(t, c, CreateTopic{Name: "race", NumPartitions: 3, ReplicationFactor: 1})
			switch {
			case res.Err == nil:
				wins.Add(1)
			case errors.Is(res.Err, kerr.TopicAlreadyExists):
				exists.Add(1)
			default:
				t.Errorf("unexpected %v", res.Err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 || exists.Load() != n-1 {
		t.Fatalf("%d wins, %d TOPIC_ALREADY_EXISTS", wins.Load(), exists.Load())
	}
}

func TestTopicIDStableAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, metadata.LocalLogOptions{SnapshotEveryRecords: 5})
	c := NewController(l, ControllerConfig{LiveBrokers: func() []int32 { return []int32{0} }})
	ids := map[string]metadata.Uuid{}
	for i := range 4 {
		name := fmt.Sprintf("t%d", i)
		res := createOne(t, c, CreateTopic{Name: name, NumPartitions: 2, ReplicationFactor: 1})
		wantKafkaError(t, res.Err, nil)
		ids[name] = res.TopicID
	}
	l.Close()
	l2 := openTestLog(t, dir, metadata.LocalLogOptions{})
	defer l2.Close()
	for name, id := range ids {
		if got := mustTopic(t, l2.Image(), name).ID; got != id {
			t.Fatalf("%s: id %v after reopen, was %v", name, got, id)
		}
	}
}

func TestReplicaPlacementIsBalanced(t *testing.T) {
	c, _ := newTestController(t, 4, ControllerConfig{})
	res := createOne(t, c, CreateTopic{Name: "b", NumPartitions: 8, ReplicationFactor: 3})
	wantKafkaError(t, res.Err, nil)
	leaders, replicas := map[int32]int{}, map[int32]int{}
	for _, p := range mustTopic(t, c.Image(), "b").Partitions {
		leaders[p.Leader]++
		for _, r := range p.Replicas {
			replicas[r]++
		}
	}
	for b := range int32(4) {
		if leaders[b] != 2 || replicas[b] != 6 {
			t.Fatalf("broker %d leads %d, hosts %d; want 2 and 6 (leaders %v replicas %v)", b, leaders[b], replicas[b], leaders, replicas)
		}
	}
}

func TestDeleteTopics(t *testing.T) {
	for _, tc := range []struct {
		name     string
		disabled bool
		names    []string
		ids      func(img *metadata.Image) []metadata.Uuid
		want     []*kerr.Error
		left     []string
	}{
		{name: "by name", names: []string{"a"}, want: []*kerr.Error{nil}, left: []string{"__consumer_offsets", "b"}},
		{name: "by id", ids: func(img *metadata.Image) []metadata.Uuid { return []metadata.Uuid{mustTopicNoT(img, "b").ID} },
			want: []*kerr.Error{nil}, left: []string{"__consumer_offsets", "a"}},
		{name: "internal topic deletable as in KRaft", names: []string{metadata.ConsumerOffsetsTopic}, want: []*kerr.Error{nil}, left: []string{"a", "b"}},
		{name: "unknown name", names: []string{"zz", "a"}, want: []*kerr.Error{kerr.UnknownTopicOrPartition, nil}, left: []string{"__consumer_offsets", "b"}},
		{name: "unknown id", ids: func(*metadata.Image) []metadata.Uuid { return []metadata.Uuid{metadata.NewUuid()} }, want: []*kerr.Error{kerr.UnknownTopicID}, left: []string{"__consumer_offsets", "a", "b"}},
		{name: "duplicate name", names: []string{"a", "a"}, want: []*kerr.Error{kerr.InvalidRequest, kerr.InvalidRequest}, left: []string{"__consumer_offsets", "a", "b"}},
		{name: "same topic by name and id", names: []string{"a"}, ids: func(img *metadata.Image) []metadata.Uuid { return []metadata.Uuid{mustTopicNoT(img, "a").ID} },
			want: []*kerr.Error{nil, nil}, left: []string{"__consumer_offsets", "b"}},
		{name: "deletion disabled", disabled: true, names: []string{"a"}, want: []*kerr.Error{kerr.TopicDeletionDisabled}, left: []string{"__consumer_offsets", "a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTestController(t, 1, ControllerConfig{DeleteTopicDisabled: tc.disabled})
			for _, n := range []string{"a", "b", metadata.ConsumerOffsetsTopic} {
				wantKafkaError(t, createOne(t, c, CreateTopic{Name: n, NumPartitions: 1, ReplicationFactor: 1}).Err, nil)
			}
			var ids []metadata.Uuid
			if tc.ids != nil {
				ids = tc.ids(c.Image())
			}
			res := c.DeleteTopics(context.Background(), tc.names, ids)
			if len(res) != len(tc.want) {
				t.Fatalf("%d results, want %d", len(res), len(tc.want))
			}
			for i, w := range tc.want {
				wantKafkaError(t, res[i].Err, w)
				if w == nil && (res[i].Name == "" || res[i].TopicID == metadata.ZeroUuid) {
					t.Fatalf("result %d lacks name or id: %+v", i, res[i])
				}
			}
			var left []string
			for _, tp := range c.Image().Topics() {
				left = append(left, tp.Name)
			}
			if !reflect.DeepEqual(left, tc.left) {
				t.Fatalf("topics left %v, want %v", left, tc.left)
			}
		})
	}
}

func mustTopicNoT(img *metadata.Image, name string) *metadata.TopicImage {
	top, ok := img.Topic(name)
	if !ok {
		panic("no topic " + name)
	}
	return top
}

func TestCreatePartitions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    CreatePartitionsSpec
		want    *kerr.Error
		wantMsg string
		count   int
	}{
		{name: "grow", spec: CreatePartitionsSpec{Name: "t", Count: 5}, count: 5},
		{name: "grow with assignment", spec: CreatePartitionsSpec{Name: "t", Count: 4, Assignment: [][]int32{{2, 1}}}, count: 4},
		{name: "shrink", spec: CreatePartitionsSpec{Name: "t", Count: 2}, want: kerr.InvalidPartitions,
			wantMsg: "Topic currently has 3 partitions, which is higher than the requested 2.", count: 3},
		{name: "same count", spec: CreatePartitionsSpec{Name: "t", Count: 3}, want: kerr.InvalidPartitions, count: 3},
		{name: "unknown topic", spec: CreatePartitionsSpec{Name: "nope", Count: 5}, want: kerr.UnknownTopicOrPartition, count: 3},
		{name: "too few assignments", spec: CreatePartitionsSpec{Name: "t", Count: 5, Assignment: [][]int32{{0, 1}}}, want: kerr.InvalidReplicaAssignment, count: 3},
		{name: "wrong replication", spec: CreatePartitionsSpec{Name: "t", Count: 4, Assignment: [][]int32{{0}}}, want: kerr.InvalidReplicaAssignment, count: 3},
		{name: "duplicate broker", spec: CreatePartitionsSpec{Name: "t", Count: 4, Assignment: [][]int32{{1, 1}}}, want: kerr.InvalidReplicaAssignment, count: 3},
		{name: "unknown broker", spec: CreatePartitionsSpec{Name: "t", Count: 4, Assignment: [][]int32{{1, 9}}}, want: kerr.InvalidReplicaAssignment, count: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTestController(t, 3, ControllerConfig{})
			wantKafkaError(t, createOne(t, c, CreateTopic{Name: "t", NumPartitions: 3, ReplicationFactor: 2}).Err, nil)
			res := c.CreatePartitions(context.Background(), []CreatePartitionsSpec{tc.spec}, false)
			wantKafkaError(t, res[0].Err, tc.want)
			if tc.wantMsg != "" && !strings.Contains(res[0].Err.Error(), tc.wantMsg) {
				t.Fatalf("message %q lacks %q", res[0].Err, tc.wantMsg)
			}
			top := mustTopic(t, c.Image(), "t")
			if len(top.Partitions) != tc.count {
				t.Fatalf("%d partitions, want %d", len(top.Partitions), tc.count)
			}
			for _, p := range top.Partitions {
				if len(p.Replicas) != 2 {
					t.Fatalf("partition %d has replicas %v", p.Partition, p.Replicas)
				}
			}
			if tc.spec.Assignment != nil && tc.want == nil && !reflect.DeepEqual(top.Partitions[3].Replicas, tc.spec.Assignment[0]) {
				t.Fatalf("partition 3 replicas %v", top.Partitions[3].Replicas)
			}
		})
	}
}

func TestCreatePartitionsValidateOnlyAndDuplicates(t *testing.T) {
	c, _ := newTestController(t, 1, ControllerConfig{})
	createOne(t, c, CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 1})
	res := c.CreatePartitions(context.Background(), []CreatePartitionsSpec{{Name: "t", Count: 3}}, true)
	wantKafkaError(t, res[0].Err, nil)
	if n := len(mustTopic(t, c.Image(), "t").Partitions); n != 1 {
		t.Fatalf("validate-only added partitions: %d", n)
	}
	res = c.CreatePartitions(context.Background(), []CreatePartitionsSpec{{Name: "t", Count: 3}, {Name: "t", Count: 4}}, false)
	wantKafkaError(t, res[0].Err, kerr.InvalidRequest)
	wantKafkaError(t, res[1].Err, kerr.InvalidRequest)
}

func TestAlterConfigs(t *testing.T) {
	c, _ := newTestController(t, 1, ControllerConfig{
		ValidateTopicConfigs: func(cfg map[string]string) error {
			if cfg["cleanup.policy"] == "bogus" {
				return errors.New("bad policy")
			}
			return nil
		},
		ValidateBrokerConfigs: func(name string, cfg map[string]string) error {
			if _, ok := cfg["broker.id"]; ok {
				return fmt.Errorf("%w: broker.id is read-only", kerr.PolicyViolation)
			}
			return nil
		},
	})
	createOne(t, c, CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 1})
	ctx := context.Background()
	topic := func(name string, v *string) ConfigChange {
		return ConfigChange{ResourceType: metadata.ConfigResourceTopic, ResourceName: "t", Name: name, Value: v}
	}

	wantKafkaError(t, c.AlterConfigs(ctx, []ConfigChange{topic("retention.ms", metadata.StringPtr("5")), topic("cleanup.policy", metadata.StringPtr("compact"))}, false), nil)
	if got := c.Image().TopicConfig("t"); !reflect.DeepEqual(got, map[string]string{"retention.ms": "5", "cleanup.policy": "compact"}) {
		t.Fatalf("config %v", got)
	}
	offset := c.Image().Offset()
	wantKafkaError(t, c.AlterConfigs(ctx, []ConfigChange{topic("retention.ms", metadata.StringPtr("5"))}, false), nil)
	if c.Image().Offset() != offset {
		t.Fatal("no-op change wrote a record")
	}
	wantKafkaError(t, c.AlterConfigs(ctx, []ConfigChange{topic("retention.ms", metadata.StringPtr("7"))}, true), nil)
	if c.Image().TopicConfig("t")["retention.ms"] != "5" {
		t.Fatal("validate-only changed the config")
	}
	wantKafkaError(t, c.AlterConfigs(ctx, []ConfigChange{topic("retention.ms", nil)}, false), nil)
	if _, ok := c.Image().TopicConfig("t")["retention.ms"]; ok {
		t.Fatal("delete did not remove the override")
	}

	for _, tc := range []struct {
		name    string
		changes []ConfigChange
		want    *kerr.Error
	}{
		{"hook rejects", []ConfigChange{topic("cleanup.policy", metadata.StringPtr("bogus"))}, kerr.InvalidConfig},
		{"unknown topic", []ConfigChange{{ResourceType: metadata.ConfigResourceTopic, ResourceName: "nope", Name: "a", Value: metadata.StringPtr("1")}}, kerr.UnknownTopicOrPartition},
		{"bad broker name", []ConfigChange{{ResourceType: metadata.ConfigResourceBroker, ResourceName: "x", Name: "a", Value: metadata.StringPtr("1")}}, kerr.InvalidRequest},
		{"unsupported resource", []ConfigChange{{ResourceType: 8, ResourceName: "x", Name: "a", Value: metadata.StringPtr("1")}}, kerr.InvalidRequest},
		{"mixed resources", []ConfigChange{topic("a", metadata.StringPtr("1")), {ResourceType: metadata.ConfigResourceBroker, Name: "a", Value: metadata.StringPtr("1")}}, kerr.InvalidRequest},
		{"broker hook keeps its code", []ConfigChange{{ResourceType: metadata.ConfigResourceBroker, ResourceName: "0", Name: "broker.id", Value: metadata.StringPtr("1")}}, kerr.PolicyViolation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := c.Image().Offset()
			wantKafkaError(t, c.AlterConfigs(ctx, tc.changes, false), tc.want)
			if c.Image().Offset() != before {
				t.Fatal("rejected change committed")
			}
		})
	}

	wantKafkaError(t, c.AlterConfigs(ctx, []ConfigChange{{ResourceType: metadata.ConfigResourceBroker, ResourceName: "", Name: "log.retention.ms", Value: metadata.StringPtr("9")}}, false), nil)
	if c.Image().BrokerConfig("")["log.retention.ms"] != "9" {
		t.Fatal("cluster default not stored")
	}
}

func TestAllocateProducerIDs(t *testing.T) {
	c, l := newTestController(t, 2, ControllerConfig{})
	ctx := context.Background()
	first, err := c.AllocateProducerIDs(ctx, 0, 0)
	if err != nil || first != 0 {
		t.Fatalf("first block %d, %v", first, err)
	}
	second, err := c.AllocateProducerIDs(ctx, 1, 0)
	if err != nil || second != ProducerIDBlockSize {
		t.Fatalf("second block %d, %v", second, err)
	}
	third, err := c.AllocateProducerIDs(ctx, 1, 10)
	if err != nil || third != 2*ProducerIDBlockSize || l.Image().NextProducerID() != 2*ProducerIDBlockSize+10 {
		t.Fatalf("third block %d, next %d, %v", third, l.Image().NextProducerID(), err)
	}
	// Blocks never overlap, even when requested concurrently.
	var mu sync.Mutex
	starts := map[int64]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := c.AllocateProducerIDs(ctx, 0, 0)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if starts[s] {
				t.Errorf("block %d handed out twice", s)
			}
			starts[s] = true
		}()
	}
	wg.Wait()
	if next := l.Image().NextProducerID(); next != 2*ProducerIDBlockSize+10+8*ProducerIDBlockSize {
		t.Fatalf("next producer id %d", next)
	}
}

func TestRegisterBroker(t *testing.T) {
	c, _ := newTestController(t, 0, ControllerConfig{})
	ctx := context.Background()
	inc := metadata.NewUuid()
	reg := metadata.RegisterBrokerRecord{BrokerID: 1, IncarnationID: inc, Rack: "r",
		Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "h", Port: 9092}}}
	wantKafkaError(t, c.RegisterBroker(ctx, reg), nil)
	b, ok := c.Image().Broker(1)
	if !ok || b.IncarnationID != inc || b.Rack != "r" || len(b.Endpoints) != 1 || b.Epoch < 0 {
		t.Fatalf("broker %+v", b)
	}
	// A restart re-registers with a new incarnation and a larger epoch.
	reg.IncarnationID = metadata.NewUuid()
	wantKafkaError(t, c.RegisterBroker(ctx, reg), nil)
	b2, _ := c.Image().Broker(1)
	if b2.Epoch <= b.Epoch || b2.IncarnationID != reg.IncarnationID {
		t.Fatalf("re-registration %+v after %+v", b2, b)
	}
	for _, bad := range []metadata.RegisterBrokerRecord{
		{BrokerID: -1, IncarnationID: metadata.NewUuid()},
		{BrokerID: 2},
		{BrokerID: 2, IncarnationID: metadata.NewUuid(), Endpoints: []metadata.Endpoint{{Name: "A"}, {Name: "A"}}},
	} {
		wantKafkaError(t, c.RegisterBroker(ctx, bad), kerr.InvalidRegistration)
	}
	if ids := c.Image().UnfencedBrokerIDs(); !reflect.DeepEqual(ids, []int32{1}) {
		t.Fatalf("brokers %v", ids)
	}
}
