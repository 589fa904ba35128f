package compat

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// registryBroker is a node serving its embedded schema registry, and the
// REST Proxy, on ports of their own.
type registryBroker struct {
	*restBroker
	registryURL string
	sr          *sr.Client
}

// startRegistryBroker starts a node with schema.registry.listeners on a
// free port (not the default 8081, so the REST Proxy finding it proves it
// is given the registry's address) and waits until the registry serves.
func startRegistryBroker(t *testing.T, opts ...Option) *registryBroker {
	t.Helper()
	skipOnKfake(t, "kfake serves no schema registry")
	addr := freeport.Addr(t)
	rb := startRestBroker(t, append([]Option{WithOverride("schema.registry.listeners", "http://"+addr)}, opts...)...)
	url := "http://" + addr
	// The registry answers 503 until it has read _schemas to its end.
	poll.Until(t, 60*time.Second, "the schema registry to serve", func() error {
		resp, err := restHTTP.Get(url + "/subjects")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	})
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	return &registryBroker{restBroker: rb, registryURL: url, sr: cl}
}

// wire is the registry's wire format of payload under schema id.
func wire(id int, payload []byte) []byte {
	b := make([]byte, 5, 5+len(payload))
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	return append(b, payload...)
}

// TestRegistryBrokerSideValidation: on a topic with
// confluent.value.schema.validation (or vltava.value.schema.validation), a
// value carrying an id registered under <topic>-value is appended, while a
// value with an unknown id, one with an id of another subject and one
// without the magic byte are refused with INVALID_RECORD; a topic without
// the check takes anything.
func TestRegistryBrokerSideValidation(t *testing.T) {
	t.Parallel()
	rb := startRegistryBroker(t)
	adm := newAdmin(t, rb.Broker)
	ctx := testContext(t, 60*time.Second)
	checked, vltavaKey, other, plain := uniqueTopic(t), uniqueTopic(t)+"-v", uniqueTopic(t)+"-o", uniqueTopic(t)+"-p"
	createTopic(t, adm, checked, 1, map[string]*string{"confluent.value.schema.validation": new("true")})
	createTopic(t, adm, vltavaKey, 1, map[string]*string{"vltava.value.schema.validation": new("true")})
	createTopic(t, adm, plain, 1, nil)

	avro := `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}`
	reg, err := rb.sr.CreateSchema(ctx, checked+"-value", sr.Schema{Schema: avro, Type: sr.TypeAvro})
	if err != nil {
		t.Fatalf("register %s-value: %v", checked, err)
	}
	if _, err := rb.sr.CreateSchema(ctx, vltavaKey+"-value", sr.Schema{Schema: avro, Type: sr.TypeAvro}); err != nil {
		t.Fatalf("register %s-value: %v", vltavaKey, err)
	}
	otherSchema := `{"type":"record","name":"Other","fields":[{"name":"x","type":"string"}]}`
	otherReg, err := rb.sr.CreateSchema(ctx, other+"-value", sr.Schema{Schema: otherSchema, Type: sr.TypeAvro})
	if err != nil {
		t.Fatalf("register %s-value: %v", other, err)
	}
	if otherReg.ID == reg.ID {
		t.Fatalf("two different schemas share id %d", reg.ID)
	}

	cl := newClient(t, rb.Broker, kgo.RecordRetries(0), kgo.ProducerLinger(0))
	produce := func(topic string, value []byte) error {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value}).FirstErr()
	}
	valid := wire(reg.ID, []byte{0x02}) // Avro long 1
	for _, topic := range []string{checked, vltavaKey} {
		if err := produce(topic, valid); err != nil {
			t.Fatalf("%s: a value with registered id %d: %v", topic, reg.ID, err)
		}
	}
	for name, value := range map[string][]byte{
		"unknown id":            wire(reg.ID+otherReg.ID+1000, []byte{0x02}),
		"another subject's id":  wire(otherReg.ID, []byte{0x02, 'a'}),
		"no magic byte":         []byte(`{"id":1}`),
		"shorter than a header": {0, 0, 0},
	} {
		if err := produce(checked, value); !errors.Is(err, kerr.InvalidRecord) {
			t.Errorf("%s: produce of a value with %s: %v, want INVALID_RECORD", checked, name, err)
		}
	}
	// Tombstones are not checked, and a topic without the check takes
	// anything.
	if err := produce(checked, nil); err != nil {
		t.Errorf("%s: a null value: %v", checked, err)
	}
	if err := produce(plain, []byte("not the wire format")); err != nil {
		t.Errorf("%s (no check): %v", plain, err)
	}
}

// TestRegistryBrokerSideKeyValidation: on a topic with
// confluent.key.schema.validation, keys are checked and values are not; a
// batch with one bad key among good ones is refused whole with
// INVALID_RECORD, the Produce v8 response naming that record's index and
// why (KIP-467), and nothing of it is appended.
func TestRegistryBrokerSideKeyValidation(t *testing.T) {
	t.Parallel()
	rb := startRegistryBroker(t)
	adm := newAdmin(t, rb.Broker)
	ctx := testContext(t, 60*time.Second)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 1, map[string]*string{"confluent.key.schema.validation": new("true")})
	key, err := rb.sr.CreateSchema(ctx, topic+"-key", sr.Schema{Schema: `"string"`, Type: sr.TypeAvro})
	if err != nil {
		t.Fatalf("register %s-key: %v", topic, err)
	}
	good := wire(key.ID, []byte{0x02, 'k'}) // Avro string "k"
	cl := newClient(t, rb.Broker, kgo.RecordRetries(0), kgo.ProducerLinger(0))
	for name, r := range map[string]*kgo.Record{
		"a registered key, a value not in the wire format": {Topic: topic, Key: good, Value: []byte("plain value")},
		"a null key": {Topic: topic, Value: []byte("no key")},
	} {
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("plain key"), Value: good}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Errorf("a key without the magic byte: %v, want INVALID_RECORD", err)
	}

	c := dialRaw(t, rb.Addr())
	c.waitLeaderReady(t, topic, 0)
	batch := encodeBatch(batchSpec{producerID: -1, producerEpoch: -1, baseSequence: -1, timestamp: time.Now().UnixMilli(),
		records: []rawRecord{{key: good, value: []byte("0")}, {key: []byte("not framed"), value: []byte("1")}, {key: good, value: []byte("2")}}})
	req := produceRequest(topic, 0, -1, batch)
	req.Version = 8
	resp, err := c.roundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	p := singlePartitionResponse(t, resp)
	if p.ErrorCode != kerr.InvalidRecord.Code || len(p.ErrorRecords) != 1 || p.ErrorRecords[0].RelativeOffset != 1 ||
		p.ErrorRecords[0].ErrorMessage == nil || !strings.Contains(*p.ErrorRecords[0].ErrorMessage, "key") {
		t.Fatalf("a batch with a bad key at index 1: %s, record errors %+v", errName(p.ErrorCode), p.ErrorRecords)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup(topic, 0); o.Offset != 2 {
		t.Fatalf("end offset %d, want 2: the refused batch was appended in part", o.Offset)
	}
}

// TestRegistryRestProxySchemas: the node's REST Proxy, given no
// rest.schema.registry.url, encodes AVRO, JSONSCHEMA and PROTOBUF records
// with the node's own registry (on a port that is not the default), into a
// topic whose broker-side validation accepts them, and a v2 consumer
// instance decodes them back.
func TestRegistryRestProxySchemas(t *testing.T) {
	t.Parallel()
	rb := startRegistryBroker(t)
	adm := newAdmin(t, rb.Broker)
	ctx := testContext(t, 90*time.Second)
	cases := []struct {
		format, typ, schema string
		data                string
	}{
		{"AVRO", "avro", `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"city","type":"string"}]}`, `{"id":7,"city":"Brno"}`},
		{"JSONSCHEMA", "jsonschema", `{"type":"object","properties":{"id":{"type":"integer"},"city":{"type":"string"}},"required":["id"]}`, `{"id":7,"city":"Brno"}`},
		{"PROTOBUF", "protobuf", "syntax = \"proto3\";\nmessage Order {\n  int64 id = 1;\n  string city = 2;\n}\n", `{"id":"7","city":"Brno"}`},
	}
	for _, c := range cases {
		t.Run(c.format, func(t *testing.T) {
			topic := uniqueTopic(t)
			createTopic(t, adm, topic, 1, map[string]*string{"confluent.value.schema.validation": new("true")})
			typ := sr.TypeAvro
			switch c.format {
			case "JSONSCHEMA":
				typ = sr.TypeJSON
			case "PROTOBUF":
				typ = sr.TypeProtobuf
			}
			reg, err := rb.sr.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: c.schema, Type: typ})
			if err != nil {
				t.Fatalf("register: %v", err)
			}

			// v3: the schema id given; v2: the subject's latest, through
			// value_schema_id.
			var report struct {
				ErrorCode int `json:"error_code"`
				Value     struct {
					Type     string `json:"type"`
					Subject  string `json:"subject"`
					SchemaID int    `json:"schema_id"`
				} `json:"value"`
			}
			rb.mustJSON(t, http.MethodPost, rb.v3("/topics/"+topic+"/records"), jsonCT, map[string]any{
				"value": map[string]any{"type": c.format, "schema_id": reg.ID, "data": json.RawMessage(c.data)},
			}, http.StatusOK, &report)
			if report.ErrorCode != 200 || report.Value.SchemaID != reg.ID || report.Value.Type != c.format {
				t.Fatalf("v3 produce report: %+v", report)
			}
			var v2 struct {
				Offsets []struct {
					Error *string `json:"error"`
				} `json:"offsets"`
				ValueSchemaID int `json:"value_schema_id"`
			}
			rb.mustJSON(t, http.MethodPost, "/topics/"+topic, "application/vnd.kafka."+c.typ+".v2+json", map[string]any{
				"value_schema_id": reg.ID,
				"records":         []map[string]any{{"value": json.RawMessage(c.data)}},
			}, http.StatusOK, &v2)
			if len(v2.Offsets) != 1 || v2.Offsets[0].Error != nil || v2.ValueSchemaID != reg.ID {
				t.Fatalf("v2 produce: %+v", v2)
			}

			// Both records are in the registry's wire format with the id.
			cl := newClient(t, rb.Broker, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			var got []*kgo.Record
			for len(got) < 2 {
				fs := cl.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					t.Fatalf("consume: %v", err)
				}
				got = append(got, fs.Records()...)
			}
			for _, r := range got {
				if len(r.Value) < 5 || r.Value[0] != 0 || int(binary.BigEndian.Uint32(r.Value[1:5])) != reg.ID {
					t.Fatalf("record at %d is not in the wire format with id %d: % x", r.Offset, reg.ID, r.Value)
				}
			}

			// A v2 consumer instance of the same format decodes them.
			group := topic + "-g"
			ct := "application/vnd.kafka.v2+json"
			rb.mustJSON(t, http.MethodPost, "/consumers/"+group, ct, map[string]any{
				"name": "c1", "format": c.typ, "auto.offset.reset": "earliest",
			}, http.StatusOK, nil)
			base := "/consumers/" + group + "/instances/c1"
			rb.mustJSON(t, http.MethodPost, base+"/subscription", ct, map[string]any{"topics": []string{topic}}, http.StatusNoContent, nil)
			var recs []struct {
				Value json.RawMessage `json:"value"`
			}
			poll.Until(t, 30*time.Second, "the consumer instance to return both records", func() error {
				var batch []struct {
					Value json.RawMessage `json:"value"`
				}
				rb.mustJSON(t, http.MethodGet, base+"/records?timeout=1000", "", nil, http.StatusOK, &batch, "Accept", "application/vnd.kafka."+c.typ+".v2+json")
				recs = append(recs, batch...)
				if len(recs) < 2 {
					return errors.New("fewer than 2 records")
				}
				return nil
			})
			for _, r := range recs {
				if !jsonEqual([]byte(c.data), r.Value) {
					t.Errorf("decoded value %s, want %s", r.Value, c.data)
				}
			}
			rb.do(t, http.MethodDelete, base, ct, nil)
		})
	}
}

// registryJSONResult mirrors registry_json.py's output.
type registryJSONResult struct {
	Sent          []json.RawMessage `json:"sent"`
	Received      []json.RawMessage `json:"received"`
	Keys          []string          `json:"keys"`
	SchemaID      int               `json:"schema_id"`
	Version       int               `json:"version"`
	Subject       string            `json:"subject"`
	SchemaType    string            `json:"schema_type"`
	SchemaByID    string            `json:"schema_by_id"`
	LookupID      int               `json:"lookup_id"`
	LookupVersion int               `json:"lookup_version"`
	Compatibility string            `json:"compatibility"`
	Compatible    bool              `json:"compatible"`
	Incompatible  bool              `json:"incompatible"`
	Refused       []int             `json:"refused"`
	SecondID      int               `json:"second_id"`
	Subjects      []string          `json:"subjects"`
	Versions      []int             `json:"versions"`
}

// TestRegistryConfluentJSONSerializer: Confluent's Python
// SchemaRegistryClient, JSONSerializer and JSONDeserializer (Debian's
// python3-confluent-kafka with python3-requests and python3-jsonschema),
// unchanged, register their schema with the node's registry, produce
// through a topic whose broker-side validation checks every value's id,
// and read back the objects they sent; the client's lookups by subject, by
// id and by schema, its compatibility checks and a refused incompatible
// registration (409, 409) answer as Confluent's registry does. franz-go's
// sr client then sees what Python registered.
func TestRegistryConfluentJSONSerializer(t *testing.T) {
	t.Parallel()
	requirePythonModule(t, "confluent_kafka", "python3-confluent-kafka")
	requirePythonModule(t, "requests", "python3-requests")
	requirePythonModule(t, "jsonschema", "python3-jsonschema")
	rb := startRegistryBroker(t)
	adm := newAdmin(t, rb.Broker)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 3, map[string]*string{"confluent.value.schema.validation": new("true")})
	const n = 500
	var res registryJSONResult
	runPythonScript(t, 150*time.Second, &res, "registry_json.py", rb.Addr(), rb.registryURL, topic, strconv.Itoa(n))

	if len(res.Sent) != n || len(res.Received) != n {
		t.Fatalf("sent %d objects, received %d, want %d each", len(res.Sent), len(res.Received), n)
	}
	// Partitions interleave: compare by key (order-<id>).
	sent := make(map[string]json.RawMessage, n)
	for i, s := range res.Sent {
		sent["order-"+strconv.Itoa(i)] = s
	}
	for i, r := range res.Received {
		want, ok := sent[res.Keys[i]]
		if !ok {
			t.Fatalf("received key %q that was not sent", res.Keys[i])
		}
		if !jsonEqual(want, r) {
			t.Fatalf("%s: received %s, sent %s", res.Keys[i], r, want)
		}
		delete(sent, res.Keys[i])
	}
	if len(sent) != 0 {
		t.Fatalf("%d objects not received", len(sent))
	}
	subject := topic + "-value"
	if res.Subject != subject || res.Version != 1 || res.SchemaID <= 0 || res.SchemaType != "JSON" ||
		res.LookupID != res.SchemaID || res.LookupVersion != 1 || !strings.Contains(res.SchemaByID, `"title": "Order"`) {
		t.Errorf("registered schema as the client sees it: %+v", res)
	}
	if res.Compatibility != "BACKWARD" || !res.Compatible || res.Incompatible {
		t.Errorf("compatibility level %q, optional property compatible=%v, required property compatible=%v; want BACKWARD, true, false",
			res.Compatibility, res.Compatible, res.Incompatible)
	}
	if len(res.Refused) != 2 || res.Refused[0] != http.StatusConflict || res.Refused[1] != http.StatusConflict {
		t.Errorf("registering the incompatible schema: %v, want HTTP 409 with error code 409", res.Refused)
	}
	if res.SecondID == res.SchemaID || res.SecondID <= 0 || !slices.Equal(res.Versions, []int{1, 2}) || !slices.Contains(res.Subjects, subject) {
		t.Errorf("after the compatible registration: id %d (first %d), versions %v, subjects %v", res.SecondID, res.SchemaID, res.Versions, res.Subjects)
	}

	// franz-go's client reads what Python registered.
	ctx := testContext(t, 30*time.Second)
	s, err := rb.sr.SchemaByVersion(ctx, subject, 1)
	if err != nil || s.ID != res.SchemaID || s.Type != sr.TypeJSON {
		t.Fatalf("sr client: version 1 of %s: %+v, %v", subject, s, err)
	}
}

// TestRegistryHTTPSAndBasicAuth: the embedded registry on an https
// endpoint (schema.registry.ssl.*) with HTTP Basic
// (schema.registry.authentication.*), as every HTTP service of the node:
// no or wrong credentials are 401, a user without the role 403, and
// franz-go's sr client with good ones registers and reads schemas; a
// skip path is served without credentials.
func TestRegistryHTTPSAndBasicAuth(t *testing.T) {
	t.Parallel()
	skipOnKfake(t, "kfake serves no schema registry")
	pki := newAdminPKI(t)
	users := filepath.Join(t.TempDir(), "registry.password")
	if err := os.WriteFile(users, []byte("app: app-secret,developer\nother: other-secret,nothing\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeport.Addr(t)
	StartBroker(t,
		WithOverride("schema.registry.listeners", "https://"+addr),
		WithOverride("schema.registry.ssl.keystore.type", "PEM"),
		WithOverride("schema.registry.ssl.keystore.location", pki.keystore),
		WithOverride("schema.registry.authentication.method", "BASIC"),
		WithOverride("schema.registry.authentication.roles", "developer"),
		WithOverride("schema.registry.authentication.users.file", users),
		WithOverride("schema.registry.authentication.skip.paths", "/schemas/types"))
	url := "https://" + addr
	cl := pki.client(false)
	poll.Until(t, 60*time.Second, "the schema registry to serve", func() error {
		req, _ := http.NewRequest(http.MethodGet, url+"/subjects", nil)
		req.SetBasicAuth("app", "app-secret")
		resp, err := cl.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	})
	if code, _ := getStatus(t, cl, url+"/subjects", "", ""); code != http.StatusUnauthorized {
		t.Errorf("no credentials: %d, want 401", code)
	}
	if code, _ := getStatus(t, cl, url+"/subjects", "app", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong password: %d, want 401", code)
	}
	if code, _ := getStatus(t, cl, url+"/subjects", "other", "other-secret"); code != http.StatusForbidden {
		t.Errorf("a user without the role: %d, want 403", code)
	}
	if code, body := getStatus(t, cl, url+"/schemas/types", "", ""); code != http.StatusOK || !strings.Contains(body, "AVRO") {
		t.Errorf("skip path /schemas/types: %d %s, want 200 without credentials", code, body)
	}
	if resp, err := http.Get("http://" + addr + "/subjects"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain http served on the https registry endpoint")
		}
	}
	srCl, err := sr.NewClient(sr.URLs(url), sr.HTTPClient(cl), sr.BasicAuth("app", "app-secret"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t, 60*time.Second)
	s, err := srCl.CreateSchema(ctx, "secure-value", sr.Schema{Schema: `{"type":"string"}`, Type: sr.TypeAvro})
	if err != nil {
		t.Fatalf("register over https with basic auth: %v", err)
	}
	if got, err := srCl.SchemaByID(ctx, s.ID); err != nil || !strings.Contains(got.Schema, "string") {
		t.Errorf("schema %d: %+v, %v", s.ID, got, err)
	}
}

// TestRegistryRestProxyBasicAuth: a REST Proxy given a registry with HTTP
// Basic through the credentials in rest.schema.registry.url's user info
// encodes AVRO records with it.
func TestRegistryRestProxyBasicAuth(t *testing.T) {
	t.Parallel()
	skipOnKfake(t, "kfake serves no schema registry")
	users := filepath.Join(t.TempDir(), "registry.password")
	if err := os.WriteFile(users, []byte("app: app-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeport.Addr(t)
	rb := startRestBroker(t,
		WithOverride("schema.registry.listeners", "http://"+addr),
		WithOverride("schema.registry.authentication.method", "BASIC"),
		WithOverride("schema.registry.authentication.users.file", users),
		WithOverride("rest.schema.registry.url", "http://app:app-secret@"+addr))
	srCl, err := sr.NewClient(sr.URLs("http://"+addr), sr.BasicAuth("app", "app-secret"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t, 60*time.Second)
	var id int
	poll.Until(t, 60*time.Second, "the schema registry to take a schema", func() error {
		s, err := srCl.CreateSchema(ctx, "basic-value", sr.Schema{Schema: `{"type":"record","name":"B","fields":[{"name":"n","type":"long"}]}`, Type: sr.TypeAvro})
		id = s.ID
		return err
	})
	topic := uniqueTopic(t)
	createTopic(t, newAdmin(t, rb.Broker), topic, 1, nil)
	var report struct {
		ErrorCode int `json:"error_code"`
		Value     struct {
			SchemaID int `json:"schema_id"`
		} `json:"value"`
	}
	rb.mustJSON(t, http.MethodPost, rb.v3("/topics/"+topic+"/records"), jsonCT, map[string]any{
		"value": map[string]any{"type": "AVRO", "schema_id": id, "data": map[string]any{"n": 5}},
	}, http.StatusOK, &report)
	if report.ErrorCode != 200 || report.Value.SchemaID != id {
		t.Fatalf("v3 produce through a registry with HTTP Basic: %+v", report)
	}
}
