package restproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The hand-formatted success report is the JSON encoding/json would write.
func TestAppendReportIsTheReportsJSON(t *testing.T) {
	part, off, id := int32(2), int64(41), 7
	rep := &produceReport{ErrorCode: 200, ClusterID: "c-1", TopicName: "orders.v1", PartitionID: &part, Offset: &off,
		Timestamp: "2026-01-02T03:04:05.678Z", Key: &reportData{Type: "BINARY", Size: 3},
		Value: &reportData{Type: "AVRO", SchemaID: &id, Size: 12}}
	line := appendReport(nil, rep)
	if !bytes.HasSuffix(line, []byte("\n")) {
		t.Fatalf("no newline: %q", line)
	}
	var got, want map[string]any
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	j, _ := json.Marshal(rep)
	json.Unmarshal(j, &want)
	if g, w := mustJSON(got), mustJSON(want); g != w {
		t.Fatalf("hand-written %s\nencoding/json %s", g, w)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestKafkaErrorsMapToConfluentCodes(t *testing.T) {
	for _, c := range []struct {
		err          error
		status, code int
	}{
		{kerr.TopicAuthorizationFailed, 403, 40301},
		{kerr.GroupAuthorizationFailed, 403, 40301},
		{kerr.SaslAuthenticationFailed, 401, 40101},
		{kerr.UnknownTopicOrPartition, 404, 40403},
		{kerr.TopicAlreadyExists, 400, 40002},
		{kerr.InvalidConfig, 400, 40002},
		{kerr.NotLeaderForPartition, 500, 50003},
		{kerr.BrokerNotAvailable, 503, 50302},
		{errors.New("boom"), 500, 50002},
		{errTopicNotFound(), 404, 40401},
	} {
		ae := kafkaErr(c.err)
		if ae.status != c.status || ae.code != c.code {
			t.Errorf("%v: %d %d, want %d %d", c.err, ae.status, ae.code, c.status, c.code)
		}
	}
}

func TestWireFormatRoundTrip(t *testing.T) {
	b := wireFormat(0x01020304, []byte("payload"))
	if !bytes.Equal(b[:5], []byte{0, 1, 2, 3, 4}) {
		t.Fatalf("header %v", b[:5])
	}
	id, payload, err := decodeWire(b)
	if err != nil || id != 0x01020304 || string(payload) != "payload" {
		t.Fatalf("%d %q %v", id, payload, err)
	}
	for _, bad := range [][]byte{nil, {0, 1, 2}, {1, 0, 0, 0, 1, 'x'}} {
		if _, _, err := decodeWire(bad); err == nil {
			t.Errorf("%v decoded", bad)
		}
	}
}

func TestAvroCodecEncodesAvroJSON(t *testing.T) {
	c, err := newAvroCodec(`{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},
		{"name":"qty","type":"int"},
		{"name":"note","type":["null","string"],"default":null},
		{"name":"price","type":"double"},
		{"name":"tags","type":{"type":"array","items":"string"}},
		{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"]}},
		{"name":"extra","type":"string","default":"none"}]}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.encode(json.RawMessage(`{"id":12345678901,"qty":3,"note":{"string":"fragile"},"price":9.5,"tags":["x","y"],"kind":"B"}`))
	if err != nil {
		t.Fatal(err)
	}
	back, err := c.decode(b)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.Unmarshal(back, &got)
	if got["id"] != float64(12345678901) || got["qty"] != float64(3) || got["price"] != 9.5 || got["kind"] != "B" || got["extra"] != "none" {
		t.Fatalf("decoded %s", back)
	}
	for _, bad := range []string{`{"id":"x","qty":1,"price":1,"tags":[],"kind":"A"}`, `{"qty":1}`, `{"id":1,"qty":1,"price":1,"tags":[],"kind":"A","note":"plain"}`, `[`} {
		if _, err := c.encode(json.RawMessage(bad)); err == nil {
			t.Errorf("%s encoded", bad)
		}
	}
	if _, err := newAvroCodec(`{"type":"record"}`, nil); err == nil {
		t.Error("an invalid schema parsed")
	}
}

func TestJSONSchemaCodecValidates(t *testing.T) {
	c, err := newJSONSchemaCodec(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := c.encode(json.RawMessage(`{ "n" : 1 }`)); err != nil || string(b) != `{"n":1}` {
		t.Fatalf("%s %v", b, err)
	}
	for _, bad := range []string{`{"n":"one"}`, `{}`, `{`} {
		if _, err := c.encode(json.RawMessage(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestBoundedReaderStopsAtItsLimit(t *testing.T) {
	br := &boundedReader{r: strings.NewReader(strings.Repeat("a", 100)), max: 10}
	b, err := io.ReadAll(br)
	if len(b) != 10 || !errors.Is(err, errRecordTooLarge) {
		t.Fatalf("%d bytes, %v", len(b), err)
	}
}

func TestPartitionerKeepsExplicitPartitions(t *testing.T) {
	tp := newPartitioner().ForTopic("t")
	r := &kgo.Record{Topic: "t", Partition: 3, Context: explicitPartition}
	if !tp.RequiresConsistency(r) || tp.Partition(r, 5) != 3 {
		t.Fatal("explicit partition not kept")
	}
	keyed := &kgo.Record{Topic: "t", Key: []byte("k")}
	if p1, p2 := tp.Partition(keyed, 5), tp.Partition(keyed, 5); p1 != p2 {
		t.Fatalf("a key moved between partitions %d and %d", p1, p2)
	}
}

func TestV2ContentTypes(t *testing.T) {
	for ct, want := range map[string]string{
		"application/vnd.kafka.json.v2+json":       fmtJSON,
		"application/vnd.kafka.binary.v2+json":     fmtBinary,
		"application/vnd.kafka.avro.v2+json":       fmtAvro,
		"application/vnd.kafka.jsonschema.v2+json": fmtJSONSchema,
		"application/vnd.kafka.protobuf.v2+json":   fmtProtobuf,
		"application/vnd.kafka.v2+json":            fmtBinary,
		"text/plain":                               "",
	} {
		r, _ := http.NewRequest(http.MethodPost, "/", nil)
		r.Header.Set("Content-Type", ct+"; charset=utf-8")
		if got := v2Format(mediaType(r)); got != want {
			t.Errorf("%s: %q, want %q", ct, got, want)
		}
	}
}
