package compat

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/poll"
)

// v2Records is a v2 records GET's answer.
type v2Records []struct {
	Topic     string          `json:"topic"`
	Key       json.RawMessage `json:"key"`
	Value     json.RawMessage `json:"value"`
	Partition int32           `json:"partition"`
	Offset    int64           `json:"offset"`
}

// TestRestV2ConsumerRoundTrip: a v2 consumer instance subscribes, reads
// what was produced (within max_bytes per request), commits, and the group
// it joined is a real one: its committed offsets are what OffsetFetch and
// `vltava groups describe` see. A deleted instance is 40403.
func TestRestV2ConsumerRoundTrip(t *testing.T) {
	t.Parallel()
	rb := startRestBroker(t)
	topic, group := uniqueTopic(t), uniqueTopic(t)+"-g"
	createTopic(t, newAdmin(t, rb.Broker), topic, 2, nil)
	const n = 20
	var records []map[string]any
	for i := 0; i < n; i++ {
		records = append(records, map[string]any{"value": base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("value-%02d", i))), "partition": i % 2})
	}
	rb.mustJSON(t, http.MethodPost, "/topics/"+topic, v2BinaryCT, map[string]any{"records": records}, http.StatusOK, nil)

	var created struct {
		InstanceID string `json:"instance_id"`
		BaseURI    string `json:"base_uri"`
	}
	rb.mustJSON(t, http.MethodPost, "/consumers/"+group, v2CT, map[string]any{
		"name": "c1", "format": "binary", "auto.offset.reset": "earliest", "auto.commit.enable": "false",
	}, http.StatusOK, &created)
	base := "/consumers/" + group + "/instances/c1"
	if created.InstanceID != "c1" || created.BaseURI != rb.url+base {
		t.Fatalf("created: %+v", created)
	}
	// The same name again is 40902.
	rb.wantError(t, rb.do(t, http.MethodPost, "/consumers/"+group, v2CT, map[string]any{"name": "c1"}), http.StatusConflict, 40902)
	rb.mustJSON(t, http.MethodPost, base+"/subscription", v2CT, map[string]any{"topics": []string{topic}}, http.StatusNoContent, nil)
	var sub struct {
		Topics []string `json:"topics"`
	}
	rb.mustJSON(t, http.MethodGet, base+"/subscription", "", nil, http.StatusOK, &sub)
	if len(sub.Topics) != 1 || sub.Topics[0] != topic {
		t.Fatalf("subscription: %+v", sub)
	}

	seen := map[string]bool{}
	poll.Until(t, 60*time.Second, fmt.Sprintf("%d records through the consumer instance", n), func() error {
		r := rb.do(t, http.MethodGet, base+"/records?timeout=1000&max_bytes=40", "", nil, "Accept", v2BinaryCT)
		if r.status != http.StatusOK || r.contentType != v2BinaryCT {
			t.Fatalf("records: %d %s: %s", r.status, r.contentType, r.body)
		}
		var recs v2Records
		if err := json.Unmarshal(r.body, &recs); err != nil {
			t.Fatal(err)
		}
		if len(recs) > 5 { // 8-byte values, 40 bytes
			t.Fatalf("%d records for max_bytes=40", len(recs))
		}
		for _, rec := range recs {
			var b64 string
			json.Unmarshal(rec.Value, &b64)
			v, _ := base64.StdEncoding.DecodeString(b64)
			if rec.Topic != topic || string(rec.Key) != "null" || seen[string(v)] {
				t.Fatalf("record %+v (%q)", rec, v)
			}
			seen[string(v)] = true
		}
		if len(seen) < n {
			return fmt.Errorf("%d records so far", len(seen))
		}
		return nil
	})
	// A mismatching Accept is 40601.
	rb.wantError(t, rb.do(t, http.MethodGet, base+"/records", "", nil, "Accept", v2JSONCT), http.StatusNotAcceptable, 40601)

	var committed []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Committed int64  `json:"committed"`
	}
	rb.mustJSON(t, http.MethodPost, base+"/offsets", v2CT, nil, http.StatusOK, &committed)
	if len(committed) != 2 || committed[0].Committed != n/2 || committed[1].Committed != n/2 {
		t.Fatalf("committed: %+v", committed)
	}
	var fetched struct {
		Offsets []struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Offset    int64  `json:"offset"`
		} `json:"offsets"`
	}
	rb.mustJSON(t, http.MethodGet, base+"/offsets", v2CT, map[string]any{"partitions": []map[string]any{{"topic": topic, "partition": 0}, {"topic": topic, "partition": 1}}}, http.StatusOK, &fetched)
	if len(fetched.Offsets) != 2 || fetched.Offsets[0].Offset != n/2 || fetched.Offsets[1].Offset != n/2 {
		t.Fatalf("committed offsets: %+v", fetched)
	}
	// An explicit commit is of the last record consumed: the group's
	// offset is the next.
	rb.mustJSON(t, http.MethodPost, base+"/offsets", v2CT, map[string]any{"offsets": []map[string]any{{"topic": topic, "partition": 0, "offset": 3}}}, http.StatusOK, nil)

	// The group is a real consumer group: a Kafka client reads its offsets
	// and the CLI describes its member.
	offs, err := newAdmin(t, rb.Broker).FetchOffsets(testContext(t, 30*time.Second), group)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup(topic, 0); o.At != 4 {
		t.Fatalf("partition 0 committed at %d, want 4", o.At)
	}
	if o, _ := offs.Lookup(topic, 1); o.At != n/2 {
		t.Fatalf("partition 1 committed at %d, want %d", o.At, n/2)
	}
	desc := groupsDescribe(t, rb.Broker, group)
	if len(desc.Members) != 1 || desc.Members[0].ClientID != "vltava-rest-consumer-c1" {
		t.Fatalf("groups describe: %+v", desc)
	}

	// Seek to the beginning of partition 1: its records come again.
	rb.mustJSON(t, http.MethodPost, base+"/positions/beginning", v2CT, map[string]any{"partitions": []map[string]any{{"topic": topic, "partition": 1}}}, http.StatusNoContent, nil)
	poll.Until(t, 30*time.Second, "partition 1 read again after the seek", func() error {
		var recs v2Records
		rb.mustJSON(t, http.MethodGet, base+"/records?timeout=1000", "", nil, http.StatusOK, &recs, "Accept", v2BinaryCT)
		for _, rec := range recs {
			if rec.Partition == 1 && rec.Offset == 0 {
				return nil
			}
		}
		return fmt.Errorf("%d records, not partition 1's first", len(recs))
	})

	rb.mustJSON(t, http.MethodDelete, base, "", nil, http.StatusNoContent, nil)
	rb.wantError(t, rb.do(t, http.MethodGet, base+"/records", "", nil), http.StatusNotFound, 40403)
}

// TestRestV2ManualAssignment: an instance assigned partitions by hand
// starts at the group's committed offset and commits through the group.
func TestRestV2ManualAssignment(t *testing.T) {
	t.Parallel()
	rb := startRestBroker(t)
	topic, group := uniqueTopic(t), uniqueTopic(t)+"-g"
	createTopic(t, newAdmin(t, rb.Broker), topic, 1, nil)
	cl := newClient(t, rb.Broker)
	for i := 0; i < 5; i++ {
		if err := cl.ProduceSync(testContext(t, 30*time.Second), &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf(`{"i":%d}`, i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	rb.mustJSON(t, http.MethodPost, "/consumers/"+group, v2CT, map[string]any{"name": "m", "format": "json", "auto.offset.reset": "earliest"}, http.StatusOK, nil)
	base := "/consumers/" + group + "/instances/m"
	rb.mustJSON(t, http.MethodPost, base+"/assignments", v2CT, map[string]any{"partitions": []map[string]any{{"topic": topic, "partition": 0}}}, http.StatusNoContent, nil)
	var asg struct {
		Partitions []struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
		} `json:"partitions"`
	}
	rb.mustJSON(t, http.MethodGet, base+"/assignments", "", nil, http.StatusOK, &asg)
	if len(asg.Partitions) != 1 || asg.Partitions[0].Topic != topic {
		t.Fatalf("assignments: %+v", asg)
	}
	rb.mustJSON(t, http.MethodPost, base+"/positions", v2CT, map[string]any{"offsets": []map[string]any{{"topic": topic, "partition": 0, "offset": 2}}}, http.StatusNoContent, nil)
	var got []string
	poll.Until(t, 30*time.Second, "records 2..4 by hand", func() error {
		var recs v2Records
		rb.mustJSON(t, http.MethodGet, base+"/records?timeout=1000", "", nil, http.StatusOK, &recs, "Accept", v2JSONCT)
		for _, rec := range recs {
			got = append(got, string(rec.Value))
		}
		if len(got) < 3 {
			return fmt.Errorf("%v", got)
		}
		return nil
	})
	if fmt.Sprint(got) != `[{"i":2} {"i":3} {"i":4}]` {
		t.Fatalf("read %v", got)
	}
	rb.mustJSON(t, http.MethodPost, base+"/offsets", v2CT, nil, http.StatusOK, nil)
	offs, err := newAdmin(t, rb.Broker).FetchOffsets(testContext(t, 30*time.Second), group)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup(topic, 0); o.At != 5 {
		t.Fatalf("committed at %d, want 5", o.At)
	}
}

// groupDescription is the part of `vltava groups describe --output json`
// the tests compare.
type groupDescription struct {
	Group   string `json:"group"`
	Members []struct {
		MemberID string `json:"member_id"`
		ClientID string `json:"client_id"`
	} `json:"members"`
	Offsets []struct {
		Topic         string `json:"topic"`
		Partition     int32  `json:"partition"`
		CurrentOffset int64  `json:"current_offset"`
		LogEndOffset  int64  `json:"log_end_offset"`
		Lag           int64  `json:"lag"`
	} `json:"offsets"`
}

// groupsDescribe runs `vltava groups describe group --output json`.
func groupsDescribe(t *testing.T, b *Broker, group string) groupDescription {
	t.Helper()
	bin, err := brokerBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "groups", "describe", group, "--bootstrap-server", b.Addr(), "--output", "json").Output()
	if err != nil {
		t.Fatalf("vltava groups describe: %v\n%s", err, out)
	}
	var many []groupDescription
	if err := json.Unmarshal(out, &many); err == nil && len(many) == 1 {
		return many[0]
	}
	var one groupDescription
	if err := json.Unmarshal(out, &one); err != nil {
		t.Fatalf("groups describe output %s: %v", out, err)
	}
	return one
}

// TestRestV2ConsumerExpiry: an instance unused for
// consumer.instance.timeout.ms is closed: it answers 40403 and its
// member has left the group.
func TestRestV2ConsumerExpiry(t *testing.T) {
	t.Parallel()
	rb := startRestBroker(t, WithOverride("rest.consumer.instance.timeout.ms", "2000"))
	topic, group := uniqueTopic(t), uniqueTopic(t)+"-g"
	createTopic(t, newAdmin(t, rb.Broker), topic, 1, nil)
	rb.mustJSON(t, http.MethodPost, "/consumers/"+group, v2CT, map[string]any{"name": "e"}, http.StatusOK, nil)
	base := "/consumers/" + group + "/instances/e"
	rb.mustJSON(t, http.MethodPost, base+"/subscription", v2CT, map[string]any{"topics": []string{topic}}, http.StatusNoContent, nil)
	poll.True(t, 30*time.Second, "the instance to join its group", func() bool {
		rb.mustJSON(t, http.MethodGet, base+"/records?timeout=500", "", nil, http.StatusOK, nil, "Accept", v2BinaryCT)
		return len(groupsDescribe(t, rb.Broker, group).Members) == 1
	})
	poll.True(t, 30*time.Second, "the idle instance to expire", func() bool {
		return rb.do(t, http.MethodGet, rb.v3("/consumer-groups/"+group), "", nil).status == http.StatusOK &&
			len(groupsDescribe(t, rb.Broker, group).Members) == 0
	})
	rb.wantError(t, rb.do(t, http.MethodGet, base+"/records", "", nil), http.StatusNotFound, 40403)
}
