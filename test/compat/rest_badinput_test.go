package compat

import (
	"net/http"
	"strings"
	"testing"
)

// TestRestBadInput: malformed JSON, an oversized body or record, a wrong
// content type, an unknown topic, partition, cluster or consumer instance
// each get their status and Confluent error code, and the proxy goes on
// serving.
func TestRestBadInput(t *testing.T) {
	t.Parallel()
	rb := startRestBroker(t, WithOverride("rest.max.request.bytes", "4096"))
	topic := uniqueTopic(t)
	createTopic(t, newAdmin(t, rb.Broker), topic, 1, nil)
	records := rb.v3("/topics/" + topic + "/records")
	big := `{"value":{"type":"STRING","data":"` + strings.Repeat("x", 8192) + `"}}`
	cases := []struct {
		name               string
		method, path, ct   string
		body               string
		status, code       int
		wantReportInStream bool
	}{
		{"malformed JSON, v3 topic create", http.MethodPost, rb.v3("/topics"), jsonCT, `{"topic_name":`, 400, 400, false},
		{"malformed JSON, v3 record", http.MethodPost, records, jsonCT, `{"value":{"type":"JSON","data":{]}}`, 400, 400, false},
		{"malformed JSON, v2 produce", http.MethodPost, "/topics/" + topic, v2JSONCT, `{"records":[{"value":}]}`, 400, 400, false},
		{"empty v3 record body", http.MethodPost, records, jsonCT, ``, 422, 42206, false},
		{"oversized body", http.MethodPost, "/topics/" + topic, v2JSONCT, `{"records":[{"value":"` + strings.Repeat("y", 8192) + `"}]}`, 413, 41301, false},
		{"oversized streamed record", http.MethodPost, records, jsonCT, big, 413, 41301, false},
		{"wrong content type, v3", http.MethodPost, records, "text/plain", `{"value":{"data":1}}`, 415, 415, false},
		{"wrong content type, v2", http.MethodPost, "/topics/" + topic, "text/plain", `{"records":[]}`, 415, 415, false},
		{"unknown topic, v3 produce", http.MethodPost, rb.v3("/topics/no-such-topic/records"), jsonCT, `{"value":{"data":1}}`, 404, 40401, false},
		{"unknown topic, v2 produce", http.MethodPost, "/topics/no-such-topic", v2JSONCT, `{"records":[{"value":1}]}`, 404, 40401, false},
		{"unknown topic, v2 metadata", http.MethodGet, "/topics/no-such-topic", "", ``, 404, 40401, false},
		{"unknown partition", http.MethodPost, records, jsonCT, `{"partition_id":7,"value":{"data":1}}`, 404, 40402, false},
		{"unknown cluster", http.MethodGet, "/v3/clusters/no-such-cluster/topics", "", ``, 404, 404, false},
		{"unknown consumer instance", http.MethodGet, "/consumers/g/instances/none/records", "", ``, 404, 40403, false},
		{"bad BINARY data", http.MethodPost, records, jsonCT, `{"value":{"type":"BINARY","data":"not base64!"}}`, 422, 42207, false},
		{"unknown embedded format", http.MethodPost, records, jsonCT, `{"value":{"type":"XML","data":"<a/>"}}`, 422, 42206, false},
		{"schema value without schema, v2", http.MethodPost, "/topics/" + topic, "application/vnd.kafka.avro.v2+json", `{"records":[{"value":{"a":1}}]}`, 422, 42202, false},
		{"bad consumer config", http.MethodPost, "/consumers/g", v2CT, `{"format":"xml"}`, 422, 42204, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rb.do(t, c.method, c.path, c.ct, c.body)
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
			}
			rb.wantError(t, r, c.status, c.code)
		})
	}
	// A bad record in a stream is reported in its place; the good ones
	// around it go in.
	r := rb.do(t, http.MethodPost, records, jsonCT,
		`{"value":{"type":"STRING","data":"a"}}{"partition_id":9,"value":{"data":1}}{"value":{"type":"STRING","data":"b"}}`)
	lines := strings.Split(strings.TrimSpace(string(r.body)), "\n")
	if r.status != http.StatusOK || len(lines) != 3 || !strings.Contains(lines[0], `"error_code":200`) ||
		!strings.Contains(lines[1], `"error_code":40402`) || !strings.Contains(lines[2], `"error_code":200`) {
		t.Fatalf("stream with a bad record: %d\n%s", r.status, r.body)
	}
	// Still serving.
	rb.mustJSON(t, http.MethodGet, rb.v3("/topics/"+topic), "", nil, http.StatusOK, nil)
}
