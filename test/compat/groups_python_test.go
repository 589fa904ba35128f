package compat

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupsKafkaPythonClickstream: kafka-python's KafkaProducer sends JSON
// click events to a 3-partition topic; a KafkaConsumer in a group with
// auto-commit reads each exactly once; a second run of the same group sees
// only the events produced after the first.
func TestGroupsKafkaPythonClickstream(t *testing.T) {
	t.Parallel()
	requirePythonModule(t, "kafka", "python3-kafka")
	b := StartBroker(t, groupBrokerOptions...)
	adm := newAdmin(t, b)
	topic := "website_clicks"
	const group = "website_analytics"
	createTopic(t, adm, topic, 3, nil)

	var sent struct{ Sent []int }
	var got struct{ Received [][3]int64 }
	runPythonScript(t, 60*time.Second, &sent, "groups_clickstream.py", b.Addr(), topic, group, "produce", "0", "30")
	runPythonScript(t, 60*time.Second, &got, "groups_clickstream.py", b.Addr(), topic, group, "consume")
	checkEvents(t, "first run", got.Received, 0, 30)

	runPythonScript(t, 60*time.Second, &sent, "groups_clickstream.py", b.Addr(), topic, group, "produce", "30", "20")
	got.Received = nil
	runPythonScript(t, 60*time.Second, &got, "groups_clickstream.py", b.Addr(), topic, group, "consume")
	checkEvents(t, "second run", got.Received, 30, 20)
}

// checkEvents requires received to be exactly events first..first+n-1,
// each once.
func checkEvents(t *testing.T, what string, received [][3]int64, first, n int) {
	t.Helper()
	var ids []int
	for _, r := range received {
		ids = append(ids, int(r[2]))
	}
	slices.Sort(ids)
	var want []int
	for i := first; i < first+n; i++ {
		want = append(want, i)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("%s: consumed events %v, want exactly %d..%d once each", what, ids, first, first+n-1)
	}
}

type librdkafkaMembers struct {
	Before  map[string][]int32 `json:"before"`
	After   map[string][]int32 `json:"after"`
	Revoked map[string][]int32 `json:"revoked"`
}

// TestGroupsLibrdkafka: three librdkafka consumers share a 6-partition
// topic, one owner per partition; when one closes its partitions move to
// the other two. With cooperative-sticky, the survivors keep what they had
// (nothing revoked from them). A committed position survives SIGKILL and a
// restart of the broker.
func TestGroupsLibrdkafka(t *testing.T) {
	t.Parallel()
	requirePythonModule(t, "confluent_kafka", "python3-confluent-kafka")
	b := StartBroker(t, groupBrokerOptions...)
	adm := newAdmin(t, b)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 6, nil)

	for _, mode := range []string{"members", "cooperative"} {
		var res librdkafkaMembers
		runPythonScript(t, 90*time.Second, &res, "groups_librdkafka.py", b.Addr(), topic, "g-"+mode+"-"+topic, mode)
		if len(res.Before) != 3 || len(res.After) != 2 {
			t.Fatalf("%s: members before %v after %v", mode, res.Before, res.After)
		}
		for _, m := range res.Before {
			if len(m) == 0 {
				t.Fatalf("%s: a member owned nothing before: %v", mode, res.Before)
			}
		}
		if mode == "cooperative" {
			for m, ps := range res.After {
				for _, p := range res.Before[m] {
					if !slices.Contains(ps, p) {
						t.Fatalf("cooperative: member %s lost partition %d (before %v, after %v)", m, p, res.Before[m], ps)
					}
				}
			}
			for m, ps := range res.Revoked {
				if m != "0" { // member 0 is the one that closed
					t.Fatalf("cooperative: surviving member %s had partitions %v revoked", m, ps)
				}
			}
		}
	}

	prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var rs []*kgo.Record
	for i := 0; i < 60; i++ {
		rs = append(rs, &kgo.Record{Partition: int32(i % 6), Value: []byte(strconv.Itoa(i))})
	}
	produceSync(t, prod, rs...)
	group := "g-resume-" + topic
	var committed struct{ Committed map[string]int64 }
	runPythonScript(t, 60*time.Second, &committed, "groups_librdkafka.py", b.Addr(), topic, group, "commit", "30")

	b.Kill()
	b.Restart()
	// One more record per partition, so every partition has a record at
	// its committed position to resume from.
	rs = rs[:0]
	for p := int32(0); p < 6; p++ {
		rs = append(rs, &kgo.Record{Partition: p, Value: []byte("after-restart")})
	}
	produceSync(t, prod, rs...)

	var resumed struct {
		First     map[string]int64
		Committed map[string]int64
	}
	runPythonScript(t, 60*time.Second, &resumed, "groups_librdkafka.py", b.Addr(), topic, group, "resume")
	for p := 0; p < 6; p++ {
		key := strconv.Itoa(p)
		want, ok := committed.Committed[key]
		if !ok {
			want = 0
		}
		if c := resumed.Committed[key]; ok && c != want {
			t.Errorf("partition %d: committed offset after restart %d, want %d", p, c, want)
		}
		if f, seen := resumed.First[key]; !seen || f != want {
			t.Errorf("partition %d: resumed at %v (seen %v), want %d", p, f, seen, want)
		}
	}
	if t.Failed() {
		t.Logf("committed %v, resumed %+v", committed.Committed, resumed)
	}
}
