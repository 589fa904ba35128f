package compat

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/vltava/vltava/internal/testing/poll"
)

// TestRestV3Topics: a topic created through v3 has Confluent's shapes
// (kind, metadata.self, resource_name), its partitions, replicas and
// configs are served, configs are altered one at a time and in a batch,
// and a deleted topic is 40401.
func TestRestV3Topics(t *testing.T) {
	t.Parallel()
	rb := startRestBroker(t)
	topic := uniqueTopic(t)
	var created struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Self         string `json:"self"`
			ResourceName string `json:"resource_name"`
		} `json:"metadata"`
		ClusterID         string `json:"cluster_id"`
		TopicName         string `json:"topic_name"`
		PartitionsCount   int    `json:"partitions_count"`
		ReplicationFactor int    `json:"replication_factor"`
		Configs           struct {
			Related string `json:"related"`
		} `json:"configs"`
	}
	rb.mustJSON(t, http.MethodPost, rb.v3("/topics"), jsonCT, map[string]any{
		"topic_name": topic, "partitions_count": 3, "replication_factor": 1,
		"configs": []map[string]string{{"name": "retention.ms", "value": "3600000"}},
	}, http.StatusCreated, &created)
	wantSelf := rb.url + rb.v3("/topics/"+topic)
	if created.Kind != "KafkaTopic" || created.Metadata.Self != wantSelf || created.TopicName != topic ||
		created.Metadata.ResourceName != "crn:///kafka="+rb.cluster+"/topic="+topic ||
		created.PartitionsCount != 3 || created.ReplicationFactor != 1 || created.Configs.Related != wantSelf+"/configs" {
		t.Fatalf("created topic: %+v", created)
	}

	var topics struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Self string  `json:"self"`
			Next *string `json:"next"`
		} `json:"metadata"`
		Data []struct {
			TopicName string `json:"topic_name"`
		} `json:"data"`
	}
	rb.mustJSON(t, http.MethodGet, rb.v3("/topics"), "", nil, http.StatusOK, &topics)
	found := false
	for _, d := range topics.Data {
		found = found || d.TopicName == topic
	}
	if topics.Kind != "KafkaTopicList" || topics.Metadata.Self != rb.url+rb.v3("/topics") || topics.Metadata.Next != nil || !found {
		t.Fatalf("topic list: %+v", topics)
	}

	var parts struct {
		Data []struct {
			Kind        string `json:"kind"`
			PartitionID int32  `json:"partition_id"`
			Leader      struct {
				Related string `json:"related"`
			} `json:"leader"`
		} `json:"data"`
	}
	rb.mustJSON(t, http.MethodGet, rb.v3("/topics/"+topic+"/partitions"), "", nil, http.StatusOK, &parts)
	if len(parts.Data) != 3 || parts.Data[2].PartitionID != 2 || parts.Data[0].Kind != "KafkaPartition" || !strings.Contains(parts.Data[0].Leader.Related, "/partitions/0/replicas/") {
		t.Fatalf("partitions: %+v", parts)
	}
	var replicas struct {
		Data []struct {
			Kind     string `json:"kind"`
			IsLeader bool   `json:"is_leader"`
			IsInSync bool   `json:"is_in_sync"`
		} `json:"data"`
	}
	rb.mustJSON(t, http.MethodGet, rb.v3("/topics/"+topic+"/partitions/1/replicas"), "", nil, http.StatusOK, &replicas)
	if len(replicas.Data) != 1 || replicas.Data[0].Kind != "KafkaReplica" || !replicas.Data[0].IsLeader || !replicas.Data[0].IsInSync {
		t.Fatalf("replicas: %+v", replicas)
	}

	type topicConfig struct {
		Kind      string  `json:"kind"`
		Name      string  `json:"name"`
		Value     *string `json:"value"`
		IsDefault bool    `json:"is_default"`
		Source    string  `json:"source"`
	}
	config := func(name string) topicConfig {
		var c topicConfig
		rb.mustJSON(t, http.MethodGet, rb.v3("/topics/"+topic+"/configs/"+name), "", nil, http.StatusOK, &c)
		return c
	}
	if c := config("retention.ms"); c.Kind != "KafkaTopicConfig" || c.Value == nil || *c.Value != "3600000" || c.Source != "DYNAMIC_TOPIC_CONFIG" {
		t.Fatalf("retention.ms: %+v", c)
	}
	rb.mustJSON(t, http.MethodPut, rb.v3("/topics/"+topic+"/configs/cleanup.policy"), jsonCT, map[string]string{"value": "compact"}, http.StatusNoContent, nil)
	if c := config("cleanup.policy"); c.Value == nil || *c.Value != "compact" {
		t.Fatalf("cleanup.policy after PUT: %+v", c)
	}
	rb.mustJSON(t, http.MethodPost, rb.v3("/topics/"+topic+"/configs:alter"), jsonCT, map[string]any{"data": []map[string]string{
		{"name": "cleanup.policy", "operation": "DELETE"},
		{"name": "segment.ms", "value": "600000"},
	}}, http.StatusNoContent, nil)
	if c := config("cleanup.policy"); c.Value == nil || *c.Value != "delete" || !c.IsDefault {
		t.Fatalf("cleanup.policy after batch DELETE: %+v", c)
	}
	if c := config("segment.ms"); c.Value == nil || *c.Value != "600000" {
		t.Fatalf("segment.ms after batch SET: %+v", c)
	}
	var all struct {
		Kind string        `json:"kind"`
		Data []topicConfig `json:"data"`
	}
	rb.mustJSON(t, http.MethodGet, rb.v3("/topics/"+topic+"/configs"), "", nil, http.StatusOK, &all)
	if all.Kind != "KafkaTopicConfigList" || len(all.Data) < 10 {
		t.Fatalf("config list: %s with %d configs", all.Kind, len(all.Data))
	}
	// A value the broker refuses is Confluent's 40002.
	r := rb.do(t, http.MethodPut, rb.v3("/topics/"+topic+"/configs/cleanup.policy"), jsonCT, map[string]string{"value": "bogus"})
	rb.wantError(t, r, http.StatusBadRequest, 40002)

	var brokers struct {
		Data []struct {
			Kind     string `json:"kind"`
			BrokerID int32  `json:"broker_id"`
			Port     int    `json:"port"`
		} `json:"data"`
	}
	rb.mustJSON(t, http.MethodGet, rb.v3("/brokers"), "", nil, http.StatusOK, &brokers)
	if len(brokers.Data) != 1 || brokers.Data[0].Kind != "KafkaBroker" || brokers.Data[0].Port == 0 {
		t.Fatalf("brokers: %+v", brokers)
	}
	var bc struct {
		Kind  string  `json:"kind"`
		Value *string `json:"value"`
	}
	rb.mustJSON(t, http.MethodGet, rb.v3(fmt.Sprintf("/brokers/%d/configs/num.partitions", brokers.Data[0].BrokerID)), "", nil, http.StatusOK, &bc)
	if bc.Kind != "KafkaBrokerConfig" || bc.Value == nil {
		t.Fatalf("broker config: %+v", bc)
	}

	rb.mustJSON(t, http.MethodDelete, rb.v3("/topics/"+topic), "", nil, http.StatusNoContent, nil)
	// The deletion reaches the metadata the proxy reads a moment later.
	poll.True(t, 30*time.Second, "the deleted topic to be gone", func() bool {
		return rb.do(t, http.MethodGet, rb.v3("/topics/"+topic), "", nil).status == http.StatusNotFound
	})
	rb.wantError(t, rb.do(t, http.MethodGet, rb.v3("/topics/"+topic), "", nil), http.StatusNotFound, 40401)
}

// TestRestProduceReadBackWithKcat: records produced through v3 (JSON,
// BINARY and STRING, with headers and an explicit partition) and v2 (the
// json and binary embedded formats) are read back by kcat byte for byte.
func TestRestProduceReadBackWithKcat(t *testing.T) {
	t.Parallel()
	requireTool(t, "kcat")
	rb := startRestBroker(t)
	topic := uniqueTopic(t)
	createTopic(t, newAdmin(t, rb.Broker), topic, 1, nil)

	type report struct {
		ErrorCode   int    `json:"error_code"`
		PartitionID int32  `json:"partition_id"`
		Offset      int64  `json:"offset"`
		Timestamp   string `json:"timestamp"`
		Value       struct {
			Type string `json:"type"`
			Size int    `json:"size"`
		} `json:"value"`
	}
	var rep report
	rb.mustJSON(t, http.MethodPost, rb.v3("/topics/"+topic+"/records"), jsonCT, map[string]any{
		"partition_id": 0,
		"headers":      []map[string]string{{"name": "h1", "value": base64.StdEncoding.EncodeToString([]byte("v1"))}},
		"key":          map[string]any{"type": "STRING", "data": "k1"},
		"value":        map[string]any{"type": "JSON", "data": map[string]any{"n": 1, "s": "x"}},
	}, http.StatusOK, &rep)
	if rep.ErrorCode != 200 || rep.Offset != 0 || rep.Value.Type != "JSON" || rep.Value.Size != len(`{"n":1,"s":"x"}`) || rep.Timestamp == "" {
		t.Fatalf("v3 JSON report: %+v", rep)
	}
	rb.mustJSON(t, http.MethodPost, rb.v3("/topics/"+topic+"/records"), jsonCT, map[string]any{
		"key":   map[string]any{"type": "BINARY", "data": base64.StdEncoding.EncodeToString([]byte("k2"))},
		"value": map[string]any{"type": "BINARY", "data": base64.StdEncoding.EncodeToString([]byte("binary-\x01"))},
	}, http.StatusOK, &rep)
	if rep.ErrorCode != 200 || rep.Offset != 1 || rep.Value.Type != "BINARY" {
		t.Fatalf("v3 BINARY report: %+v", rep)
	}

	var v2resp struct {
		KeySchemaID   *int `json:"key_schema_id"`
		ValueSchemaID *int `json:"value_schema_id"`
		Offsets       []struct {
			Partition *int32  `json:"partition"`
			Offset    *int64  `json:"offset"`
			ErrorCode *int    `json:"error_code"`
			Error     *string `json:"error"`
		} `json:"offsets"`
	}
	rb.mustJSON(t, http.MethodPost, "/topics/"+topic, v2JSONCT, map[string]any{"records": []map[string]any{
		{"key": "k3", "value": []any{1, "two"}},
		{"value": map[string]any{"nested": map[string]any{"ok": true}}},
	}}, http.StatusOK, &v2resp)
	if len(v2resp.Offsets) != 2 || *v2resp.Offsets[0].Offset != 2 || *v2resp.Offsets[1].Offset != 3 || v2resp.Offsets[0].ErrorCode != nil || v2resp.ValueSchemaID != nil {
		t.Fatalf("v2 json response: %+v", v2resp)
	}
	rb.mustJSON(t, http.MethodPost, "/topics/"+topic+"/partitions/0", v2BinaryCT, map[string]any{"records": []map[string]any{
		{"key": base64.StdEncoding.EncodeToString([]byte("k5")), "value": base64.StdEncoding.EncodeToString([]byte("v2-binary"))},
	}}, http.StatusOK, &v2resp)
	if len(v2resp.Offsets) != 1 || *v2resp.Offsets[0].Offset != 4 || *v2resp.Offsets[0].Partition != 0 {
		t.Fatalf("v2 binary response: %+v", v2resp)
	}

	out := runKcat(t, "", "-b", rb.Addr(), "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%o|%k|%s|%h\n")
	want := []string{
		`0|k1|{"n":1,"s":"x"}|h1=v1`,
		"1|k2|binary-\x01|",
		`2|"k3"|[1,"two"]|`,
		`3||{"nested":{"ok":true}}|`,
		"4|k5|v2-binary|",
	}
	got := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("kcat read:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRestV3StreamingProduce: 10,000 records streamed in one chunked
// request get 10,000 reports, in order, each as soon as it is acknowledged;
// the topic then holds exactly those records.
func TestRestV3StreamingProduce(t *testing.T) {
	t.Parallel()
	rb := startRestBroker(t)
	topic := uniqueTopic(t)
	adm := newAdmin(t, rb.Broker)
	createTopic(t, adm, topic, 3, nil)
	const n = 10000
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriter(pw)
		for i := 0; i < n; i++ {
			fmt.Fprintf(bw, `{"partition_id":%d,"key":{"type":"STRING","data":"k%d"},"value":{"type":"JSON","data":{"i":%d}}}`, i%3, i, i)
			if i%1000 == 999 {
				bw.Flush() // arrive in chunks, as a streaming client's do
			}
		}
		bw.Flush()
		pw.Close()
	}()
	req, err := http.NewRequest(http.MethodPost, rb.url+rb.v3("/topics/"+topic+"/records"), pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", jsonCT)
	resp, err := restHTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(resp.TransferEncoding) == 0 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("status %d, transfer encoding %v", resp.StatusCode, resp.TransferEncoding)
	}
	dec := json.NewDecoder(resp.Body)
	next := map[int32]int64{}
	count := 0
	for {
		var rep struct {
			ErrorCode   int    `json:"error_code"`
			Message     string `json:"message"`
			PartitionID int32  `json:"partition_id"`
			Offset      int64  `json:"offset"`
		}
		if err := dec.Decode(&rep); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("report %d: %v", count, err)
		}
		if rep.ErrorCode != 200 || rep.PartitionID != int32(count%3) || rep.Offset != next[rep.PartitionID] {
			t.Fatalf("report %d: %+v (next offset of partition %d: %d)", count, rep, rep.PartitionID, next[rep.PartitionID])
		}
		next[rep.PartitionID]++
		count++
	}
	if count != n {
		t.Fatalf("%d reports, want %d", count, n)
	}
	ends, err := adm.ListEndOffsets(testContext(t, 30*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	var offs []int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset; offs = append(offs, o.Offset) })
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	if total != n {
		t.Fatalf("end offsets %v sum to %d, want %d", offs, total, n)
	}
}
