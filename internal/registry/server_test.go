package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/testing/freeport"
)

// startRegistry runs a registry node on a loopback port against cluster.
func startRegistry(t *testing.T, cluster *kfake.Cluster, maxBytes int64) (*Server, string) {
	t.Helper()
	port := freeport.Port(t)
	cfg := Config{
		Listeners: []config.HTTPListener{{Scheme: "http", Host: "127.0.0.1", Port: port}},
		Store: StoreConfig{Topic: "_schemas", ReplicationFactor: 3, InitTimeout: 20 * time.Second,
			Client: []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...)}},
		CompatibilityLevel: CompatBackward,
		MaxRequestBytes:    maxBytes,
	}
	s, err := Start(context.Background(), cfg, ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, fmt.Sprintf("http://127.0.0.1:%d", port)
}

func newCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

const userV1 = `{"type":"record","name":"User","fields":[{"name":"name","type":"string"}]}`
const userV2 = `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0}]}`
const userBad = `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"email","type":"string"}]}`

// TestFranzGoClient drives the registry with franz-go's pkg/sr client:
// register, idempotent re-register, lookup, compatibility, configs, a
// serde round trip, deletes; then a second node over the same topic sees
// the same ids.
func TestFranzGoClient(t *testing.T) {
	cluster := newCluster(t)
	s, url := startRegistry(t, cluster, 0)
	ctx := context.Background()
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: userV1})
	if err != nil {
		t.Fatal(err)
	}
	if ss.ID != 1 || ss.Version != 1 {
		t.Fatalf("first schema: id %d version %d, want 1/1", ss.ID, ss.Version)
	}
	again, err := cl.RegisterSchema(ctx, "users-value", sr.Schema{Schema: userV1}, -1, -1)
	if err != nil || again != 1 {
		t.Fatalf("re-register: %d, %v; want id 1", again, err)
	}
	res, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), "users-value", -1, sr.Schema{Schema: userBad})
	if err != nil || res.Is {
		t.Fatalf("field without default under BACKWARD: %+v, %v; want incompatible", res, err)
	}
	if _, err := cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: userBad}); err == nil {
		t.Fatal("incompatible schema registered")
	} else if re := (*sr.ResponseError)(nil); !asResponseError(err, &re) || re.ErrorCode != 409 {
		t.Fatalf("incompatible: %v, want error code 409", err)
	}
	v2, err := cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: userV2})
	if err != nil || v2.ID != 2 || v2.Version != 2 {
		t.Fatalf("compatible v2: %+v, %v", v2, err)
	}
	// The same schema under another subject keeps its id.
	other, err := cl.CreateSchema(ctx, "other-value", sr.Schema{Schema: userV2})
	if err != nil || other.ID != 2 || other.Version != 1 {
		t.Fatalf("same schema, other subject: %+v, %v", other, err)
	}
	looked, err := cl.LookupSchema(ctx, "users-value", sr.Schema{Schema: userV1})
	if err != nil || looked.ID != 1 || looked.Version != 1 {
		t.Fatalf("lookup: %+v, %v", looked, err)
	}
	byID, err := cl.SchemaByID(ctx, 2)
	if err != nil || byID.Schema != userV2 {
		t.Fatalf("by id: %+v, %v", byID, err)
	}
	if r := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatFull}, "users-value"); r[0].Err != nil || r[0].Level != sr.CompatFull {
		t.Fatalf("set compatibility: %+v", r[0])
	}
	if r := cl.Compatibility(ctx, "users-value"); r[0].Err != nil || r[0].Level != sr.CompatFull {
		t.Fatalf("get compatibility: %+v", r[0])
	}

	// Serde round trip on the registered id, with hamba/avro as the codec.
	type user struct {
		Name string `avro:"name"`
		Age  int    `avro:"age"`
	}
	avroSchema, err := parseAvro(userV2, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	var serde sr.Serde
	serde.Register(2, user{}, sr.EncodeFn(func(v any) ([]byte, error) { return avroMarshal(avroSchema, v) }),
		sr.DecodeFn(func(b []byte, v any) error { return avroUnmarshal(avroSchema, b, v) }))
	wire, err := serde.Encode(user{Name: "ann", Age: 7})
	if err != nil {
		t.Fatal(err)
	}
	if wire[0] != 0 || wire[4] != 2 {
		t.Fatalf("wire header % x, want magic 0 and id 2", wire[:5])
	}
	var back user
	if err := serde.Decode(wire, &back); err != nil || back != (user{"ann", 7}) {
		t.Fatalf("decoded %+v, %v", back, err)
	}

	// Soft delete, then permanent; permanent first is refused.
	if err := cl.DeleteSchema(ctx, "other-value", 1, sr.HardDelete); err == nil {
		t.Fatal("permanent delete before soft delete accepted")
	}
	if _, err := cl.DeleteSubject(ctx, "other-value", sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.DeleteSubject(ctx, "other-value", sr.SoftDelete); !hasCode(err, 40404) {
		t.Fatalf("second soft delete: %v, want 40404", err)
	}
	if _, err := cl.DeleteSubject(ctx, "other-value", sr.HardDelete); err != nil {
		t.Fatal(err)
	}
	subjects, err := cl.Subjects(ctx)
	if err != nil || strings.Join(subjects, ",") != "users-value" {
		t.Fatalf("subjects: %v, %v", subjects, err)
	}

	// A second node reads the topic: same ids, same versions.
	s.Close()
	_, url2 := startRegistry(t, cluster, 0)
	cl2, _ := sr.NewClient(sr.URLs(url2))
	byID, err = cl2.SchemaByID(ctx, 1)
	if err != nil || byID.Schema != userV1 {
		t.Fatalf("after restart, id 1: %+v, %v", byID, err)
	}
	next, err := cl2.CreateSchema(ctx, "third-value", sr.Schema{Schema: `"string"`})
	if err != nil || next.ID != 3 {
		t.Fatalf("after restart, a new schema: %+v, %v; want id 3", next, err)
	}
}

func asResponseError(err error, re **sr.ResponseError) bool {
	e, ok := err.(*sr.ResponseError)
	if ok {
		*re = e
	}
	return ok
}

func hasCode(err error, code int) bool {
	var re *sr.ResponseError
	return asResponseError(err, &re) && re.ErrorCode == code
}

// TestBadInput: malformed JSON, an oversized body, a wrong content type,
// an unknown subject or version, an invalid schema: each gets its status
// and code, and the server keeps serving.
func TestBadInput(t *testing.T) {
	cluster := newCluster(t)
	_, url := startRegistry(t, cluster, 4096)
	do := func(method, path, ctype, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	reg := func(schema string) string {
		b, _ := json.Marshal(map[string]string{"schema": schema})
		return string(b)
	}
	huge := reg(`{"type":"record","name":"R","doc":"` + strings.Repeat("x", 8192) + `","fields":[]}`)
	for _, c := range []struct {
		name, method, path, ctype, body string
		status, code                    int
	}{
		{"malformed JSON", "POST", "/subjects/s/versions", ContentType, `{"schema": `, 400, 400},
		{"oversized body", "POST", "/subjects/s/versions", ContentType, huge, 413, 413},
		{"wrong content type", "POST", "/subjects/s/versions", "text/plain", reg(userV1), 415, 415},
		{"unknown field", "POST", "/subjects/s/versions", ContentType, `{"schema":"\"string\"","bogus":1}`, 422, 422},
		{"invalid schema", "POST", "/subjects/s/versions", ContentType, reg(`{"type":"record","name":"R"}`), 422, 42201},
		{"invalid schema type", "POST", "/subjects/s/versions", ContentType, `{"schema":"{}","schemaType":"XML"}`, 422, 42201},
		{"unknown subject", "GET", "/subjects/nope/versions/1", "", "", 404, 40401},
		{"unknown id", "GET", "/schemas/ids/99", "", "", 404, 40403},
		{"invalid version", "GET", "/subjects/s/versions/zero", "", "", 422, 42202},
		{"invalid compatibility", "PUT", "/config", ContentType, `{"compatibility":"SIDEWAYS"}`, 422, 42203},
		{"invalid mode", "PUT", "/mode", ContentType, `{"mode":"WRITEONLY"}`, 422, 42204},
		{"unknown route", "GET", "/nothing/here", "", "", 404, 404},
		{"wrong method", "PATCH", "/subjects", "", "", 405, 405},
	} {
		status, body := do(c.method, c.path, c.ctype, c.body)
		if status != c.status || body["error_code"] != float64(c.code) {
			t.Errorf("%s: %d %v, want %d with error_code %d", c.name, status, body, c.status, c.code)
		}
	}
	// Still serving, and a known subject with an unknown version is 40402.
	if status, body := do("POST", "/subjects/s/versions", "application/json", reg(userV1)); status != 200 || body["id"] != float64(1) {
		t.Fatalf("register after bad input: %d %v", status, body)
	}
	if status, body := do("GET", "/subjects/s/versions/7", "", ""); status != 404 || body["error_code"] != float64(40402) {
		t.Fatalf("unknown version: %d %v", status, body)
	}
}

// TestImportMode: IMPORT keeps the given ids and versions.
func TestImportMode(t *testing.T) {
	cluster := newCluster(t)
	_, url := startRegistry(t, cluster, 0)
	ctx := context.Background()
	cl, _ := sr.NewClient(sr.URLs(url))
	if r := cl.SetMode(ctx, sr.ModeImport); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	id, err := cl.RegisterSchema(ctx, "imp", sr.Schema{Schema: userV1}, 42, 5)
	if err != nil || id != 42 {
		t.Fatalf("import register: %d, %v", id, err)
	}
	got, err := cl.SchemaByVersion(ctx, "imp", 5)
	if err != nil || got.ID != 42 {
		t.Fatalf("imported version: %+v, %v", got, err)
	}
	if r := cl.SetMode(ctx, sr.ModeReadWrite); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	next, err := cl.RegisterSchema(ctx, "imp2", sr.Schema{Schema: `"int"`}, -1, -1)
	if err != nil || next != 43 {
		t.Fatalf("after import: id %d, %v; want 43", next, err)
	}
	if r := cl.SetMode(ctx, sr.ModeReadOnly); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if _, err := cl.RegisterSchema(ctx, "imp3", sr.Schema{Schema: `"long"`}, -1, -1); !hasCode(err, 42205) {
		t.Fatalf("register in READONLY: %v, want 42205", err)
	}
}

func avroMarshal(s *avroSchema, v any) ([]byte, error) { return avro.Marshal(s.schema, v) }

func avroUnmarshal(s *avroSchema, b []byte, v any) error { return avro.Unmarshal(s.schema, b, v) }
