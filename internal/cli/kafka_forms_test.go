package cli

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestProposeAssignmentSpreadsReplicas(t *testing.T) {
	current := map[string]map[int32][]int32{"t": {0: {1, 2}, 1: {1, 2}, 2: {1, 2}, 3: {1, 2}}}
	got, err := proposeAssignment(current, []int32{3, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32][]int32{0: {1, 2}, 1: {2, 3}, 2: {3, 1}, 3: {1, 3}}
	if !reflect.DeepEqual(got["t"], want) {
		t.Errorf("proposal %v, want %v", got["t"], want)
	}
	if _, err := proposeAssignment(map[string]map[int32][]int32{"t": {0: {1, 2, 3}}}, []int32{1, 2}); err == nil {
		t.Error("replication factor above the broker count was accepted")
	}
}

func TestPlanThrottlesThrottleOnlyMoves(t *testing.T) {
	current := map[string]map[int32][]int32{"a": {0: {1, 2}, 1: {2, 3}}, "b": {0: {1}}}
	target := map[string]map[int32][]int32{"a": {0: {3, 2}, 1: {2, 3}}, "b": {0: {1}}}
	th := planThrottles(current, target)
	if !reflect.DeepEqual(th.brokers, []int32{1, 2, 3}) {
		t.Errorf("brokers %v", th.brokers)
	}
	if got := th.topics["a"]; got != [2]string{"0:1,0:2", "0:3"} {
		t.Errorf("topic a throttles %q", got)
	}
	if _, ok := th.topics["b"]; ok {
		t.Errorf("unmoved topic b throttled: %v", th.topics)
	}
}

// fakeAlterer records the IncrementalAlterConfigs the throttle code sends.
type fakeAlterer struct{ calls []string }

func (f *fakeAlterer) record(kind string, cfg []kadm.AlterConfig, names []string) {
	for _, c := range cfg {
		v := "<delete>"
		if c.Value != nil {
			v = *c.Value
		}
		f.calls = append(f.calls, kind+" "+strings.Join(names, ",")+" "+c.Name+"="+v)
	}
}

func (f *fakeAlterer) AlterBrokerConfigs(_ context.Context, cfg []kadm.AlterConfig, brokers ...int32) (kadm.AlterConfigsResponses, error) {
	f.record("broker", cfg, strings.Split(joinInt32s(brokers), ","))
	return nil, nil
}

func (f *fakeAlterer) AlterTopicConfigs(_ context.Context, cfg []kadm.AlterConfig, topics ...string) (kadm.AlterConfigsResponses, error) {
	f.record("topic", cfg, topics)
	return nil, nil
}

func (f *fakeAlterer) ThrottledBrokers(_ context.Context, brokers []int32) ([]int32, error) {
	return brokers, nil
}

func TestThrottlesSetAndCleared(t *testing.T) {
	th := throttles{brokers: []int32{1, 3}, topics: map[string][2]string{"a": {"0:1", "0:3"}}}
	var f fakeAlterer
	if err := applyThrottles(context.Background(), &f, th, 1000, 500); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"broker 1,3 leader.replication.throttled.rate=1000",
		"broker 1,3 follower.replication.throttled.rate=1000",
		"broker 1,3 replica.alter.log.dirs.io.max.bytes.per.second=500",
		"topic a leader.replication.throttled.replicas=0:1",
		"topic a follower.replication.throttled.replicas=0:3",
	}
	if !reflect.DeepEqual(f.calls, want) {
		t.Errorf("set:\n%s\nwant\n%s", strings.Join(f.calls, "\n"), strings.Join(want, "\n"))
	}
	f = fakeAlterer{}
	if err := clearThrottles(context.Background(), &f, []int32{1, 2, 3}, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	want = []string{
		"broker 1,2,3 leader.replication.throttled.rate=<delete>",
		"broker 1,2,3 follower.replication.throttled.rate=<delete>",
		"broker 1,2,3 replica.alter.log.dirs.io.max.bytes.per.second=<delete>",
		"topic a leader.replication.throttled.replicas=<delete>",
		"topic a follower.replication.throttled.replicas=<delete>",
	}
	if !reflect.DeepEqual(f.calls, want) {
		t.Errorf("clear:\n%s\nwant\n%s", strings.Join(f.calls, "\n"), strings.Join(want, "\n"))
	}
}

func TestPartitionFilter(t *testing.T) {
	live := map[int32]bool{1: true, 2: true}
	p := func(leader int32, replicas, isr []int32) partitionDescription {
		return partitionDescription{Leader: leader, Replicas: replicas, ISR: isr}
	}
	for _, tc := range []struct {
		name string
		f    partitionFilter
		p    partitionDescription
		want bool
	}{
		{"no filter keeps all", partitionFilter{}, p(1, []int32{1, 2}, []int32{1}), true},
		{"under-replicated", partitionFilter{underReplicated: true}, p(1, []int32{1, 2}, []int32{1}), true},
		{"fully replicated", partitionFilter{underReplicated: true}, p(1, []int32{1, 2}, []int32{1, 2}), false},
		{"no leader is unavailable", partitionFilter{unavailable: true}, p(-1, []int32{1}, nil), true},
		{"dead leader is unavailable", partitionFilter{unavailable: true}, p(3, []int32{3}, []int32{3}), true},
		{"live leader", partitionFilter{unavailable: true}, p(1, []int32{1}, []int32{1}), false},
		{"under min isr", partitionFilter{underMinISR: true}, p(1, []int32{1, 2}, []int32{1}), true},
		{"no leader is under min isr", partitionFilter{underMinISR: true}, p(-1, []int32{1, 2}, []int32{1, 2}), true},
		{"not under min isr", partitionFilter{underMinISR: true}, p(1, []int32{1, 2}, []int32{1, 2}), false},
		{"at min isr", partitionFilter{atMinISR: true}, p(1, []int32{1, 2}, []int32{1, 2}), true},
	} {
		if got := tc.f.keep(tc.p, live, 2); got != tc.want {
			t.Errorf("%s: keep = %v", tc.name, got)
		}
	}
}

func TestKafkaAddConfigs(t *testing.T) {
	got, err := kafkaAddConfigs([]string{"a=1,b=[x,y],c=", "d=[z]"}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"a", "1"}, {"b", "x,y"}, {"c", ""}, {"d", "z"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v", got)
	}
	if _, err := kafkaAddConfigs([]string{"novalue"}, ""); err == nil {
		t.Error("entry without = accepted")
	}
}

func TestParseResetDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"90m": 90 * time.Minute, "PT1H30M": 90 * time.Minute, "P1D": 24 * time.Hour,
		"PT0.5S": 500 * time.Millisecond, "P1DT2H": 26 * time.Hour} {
		if got, err := parseResetDuration(in); err != nil || got != want {
			t.Errorf("%s: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "P", "PT", "-5m", "1 hour"} {
		if _, err := parseResetDuration(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestKafkaFormatter(t *testing.T) {
	f, err := parseKafkaFormatter([]string{"print.key=true", "print.partition=true", "print.headers=true", "key.separator=|", "null.literal=NULL"})
	if err != nil {
		t.Fatal(err)
	}
	r := &kgo.Record{Partition: 3, Value: []byte("v"), Headers: []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "b"}}}
	if got := string(f.format(r)); got != "Partition:3|a:1,b:NULL|NULL|v\n" {
		t.Errorf("got %q", got)
	}
	if _, err := parseKafkaFormatter([]string{"print.key=maybe"}); err == nil {
		t.Error("non-boolean print.key accepted")
	}
}

func TestProducerPropsFlagsWin(t *testing.T) {
	s := producerSettings{acks: "all", compression: "none"}
	p := defaultClientProps()
	changed := func(f string) bool { return f == "acks" }
	warnings, err := applyProducerProps([][2]string{{"acks", "0"}, {"compression.type", "zstd"}, {"linger.ms", "7"},
		{"client.id", "me"}, {"buffer.memory", "1"}}, &s, &p, changed)
	if err != nil {
		t.Fatal(err)
	}
	if s.acks != "all" || s.compression != "zstd" || s.linger != 7*time.Millisecond || p.clientID != "me" {
		t.Errorf("settings %+v, client id %q", s, p.clientID)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "buffer.memory") {
		t.Errorf("warnings %v", warnings)
	}
	if _, err := applyProducerProps([][2]string{{"sasl.client.callback.handler.class", "x"}}, &s, &p, changed); err == nil {
		t.Error("an unsupported SASL setting accepted")
	}
}

func TestConsumerPropsFetchMaxWait(t *testing.T) {
	p := defaultClientProps()
	none := func(string) bool { return false }
	var o consumeOptions
	if _, err := applyConsumerProps([][2]string{{"fetch.max.wait.ms", "250"}}, &o, &p, none); err != nil || o.fetchMaxWait != 250*time.Millisecond {
		t.Errorf("fetch.max.wait.ms=250: wait %v, err %v", o.fetchMaxWait, err)
	}
	for _, v := range []string{"0", "9"} {
		if _, err := applyConsumerProps([][2]string{{"fetch.max.wait.ms", v}}, &o, &p, none); err == nil {
			t.Errorf("fetch.max.wait.ms=%s accepted though the client cannot honour it", v)
		}
	}
}

func TestParseResetTime(t *testing.T) {
	utc := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2024-05-01T12:00:00Z":          utc,
		"2024-05-01T12:00:00.000Z":      utc,
		"2024-05-01T14:00:00.000+02:00": utc,
		"2024-05-01T14:00:00.000+0200":  utc,
		"2024-05-01T12:00:00.000":       time.Date(2024, 5, 1, 12, 0, 0, 0, time.Local),
		"2024-05-01T12:00:00":           time.Date(2024, 5, 1, 12, 0, 0, 0, time.Local),
	} {
		if got, err := parseResetTime(in); err != nil || !got.Equal(want) {
			t.Errorf("%s: %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseResetTime("yesterday"); err == nil {
		t.Error("bad time accepted")
	}
}

func TestParseReplicaAssignment(t *testing.T) {
	got, err := parseReplicaAssignment("1:2,2:3,3:1")
	if err != nil || !reflect.DeepEqual(got, map[int32][]int32{0: {1, 2}, 1: {2, 3}, 2: {3, 1}}) {
		t.Errorf("got %v, %v", got, err)
	}
	for _, bad := range []string{"1:2,3", "1:1", "a", "1,,2"} {
		if _, err := parseReplicaAssignment(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestAnyMovingIgnoresSettledEntries(t *testing.T) {
	settled := kadm.ListPartitionReassignmentsResponses{"t": {0: {Topic: "t", Partition: 0, Replicas: []int32{1, 2}}}}
	if anyMoving(settled) {
		t.Error("an entry adding and removing nothing counted as moving")
	}
	settled["t"][1] = kadm.ListPartitionReassignmentsResponse{Topic: "t", Partition: 1, Replicas: []int32{1, 2, 3}, AddingReplicas: []int32{3}}
	if !anyMoving(settled) {
		t.Error("an entry adding a replica did not count as moving")
	}
}
