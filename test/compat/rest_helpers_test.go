package compat

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// restBroker is a broker serving the REST Proxy on its own port.
type restBroker struct {
	*Broker
	url     string // http://host:port
	cluster string // the cluster id, from GET /v3/clusters
	auth    []string
}

// startRestBroker starts a broker with rest.listeners on a free port.
func startRestBroker(t *testing.T, opts ...Option) *restBroker {
	t.Helper()
	return startRestBrokerAs(t, nil, opts...)
}

// startRestBrokerAs is startRestBroker whose requests carry the headers
// auth (basic-auth credentials) unless a request sets its own.
func startRestBrokerAs(t *testing.T, auth []string, opts ...Option) *restBroker {
	t.Helper()
	skipOnKfake(t, "kfake serves no REST Proxy")
	addr := freeport.Addr(t)
	b := StartBroker(t, append([]Option{WithOverride("rest.listeners", "http://"+addr)}, opts...)...)
	rb := &restBroker{Broker: b, url: "http://" + addr, auth: auth}
	// The proxy listens once the node is registered, after its Kafka
	// listener answers.
	poll.Until(t, 30*time.Second, "the REST Proxy to answer", func() error {
		resp, err := restHTTP.Get(rb.url + "/v3/clusters")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	var clusters struct {
		Data []struct {
			ClusterID string `json:"cluster_id"`
		} `json:"data"`
	}
	rb.mustJSON(t, http.MethodGet, "/v3/clusters", "", nil, http.StatusOK, &clusters)
	if len(clusters.Data) != 1 || clusters.Data[0].ClusterID == "" {
		t.Fatalf("GET /v3/clusters: %+v", clusters)
	}
	rb.cluster = clusters.Data[0].ClusterID
	return rb
}

// v3 is the v3 path of the broker's cluster.
func (rb *restBroker) v3(path string) string { return "/v3/clusters/" + rb.cluster + path }

// restResponse is an answer: status, content type and body.
type restResponse struct {
	status      int
	contentType string
	body        []byte
}

var restHTTP = &http.Client{Timeout: 60 * time.Second}

// do sends one request; body may be a string, []byte, io.Reader or a
// value to encode as JSON.
func (rb *restBroker) do(t *testing.T, method, path, contentType string, body any, hdr ...string) restResponse {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader:
		rd = b
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, rb.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	hdr = append(append([]string(nil), rb.auth...), hdr...)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := restHTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading: %v", method, path, err)
	}
	return restResponse{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: b}
}

// mustJSON sends a request, requires the status and decodes the body into
// out (if not nil).
func (rb *restBroker) mustJSON(t *testing.T, method, path, contentType string, body any, status int, out any, hdr ...string) {
	t.Helper()
	r := rb.do(t, method, path, contentType, body, hdr...)
	if r.status != status {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, status, r.body)
	}
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			t.Fatalf("%s %s: decoding %s: %v", method, path, r.body, err)
		}
	}
}

// restError is Confluent's error body.
type restError struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

// wantError requires an error answer with the status and error code.
func (rb *restBroker) wantError(t *testing.T, r restResponse, status, code int) {
	t.Helper()
	var e restError
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	if r.status != status || e.ErrorCode != code || e.Message == "" {
		t.Fatalf("got status %d, error_code %d (%q), want %d and %d", r.status, e.ErrorCode, e.Message, status, code)
	}
}

const (
	jsonCT     = "application/json"
	v2CT       = "application/vnd.kafka.v2+json"
	v2JSONCT   = "application/vnd.kafka.json.v2+json"
	v2BinaryCT = "application/vnd.kafka.binary.v2+json"
)
