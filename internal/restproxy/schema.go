package restproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vltava/vltava/internal/registry"
)

// registeredSchema is a schema of the registry with its codec.
type registeredSchema struct {
	id      int
	version int // 0 when looked up by id alone
	format  string
	codec   codec
}

// codec turns a record's JSON data into a schema's payload and back.
type codec interface {
	encode(data json.RawMessage) ([]byte, error)
	decode(payload []byte) (json.RawMessage, error)
}

// schemaClient is the client side of Confluent's Schema Registry API,
// caching schemas by id (ids are global and immutable).
type schemaClient struct {
	url  string
	http *http.Client
	mu   sync.Mutex // guards ids
	ids  map[int]*registeredSchema
}

func newSchemaClient(u string) *schemaClient {
	return &schemaClient{url: strings.TrimRight(u, "/"), http: &http.Client{Timeout: 10 * time.Second}, ids: map[int]*registeredSchema{}}
}

// schemaResponse is the registry's schema object.
type schemaResponse struct {
	Subject    string            `json:"subject"`
	Version    int               `json:"version"`
	ID         int               `json:"id"`
	Schema     string            `json:"schema"`
	SchemaType string            `json:"schemaType"`
	References []schemaReference `json:"references"`
}

// schemaReference is a schema's reference to another subject's version.
type schemaReference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// call makes one registry request; a registry error becomes 42207 naming
// it, a registry that cannot be reached 40801, as Confluent's serializer
// failures are answered.
func (sc *schemaClient) call(cx context.Context, method, path string, body any, out any) error {
	if sc.url == "" {
		return errf(codeSerialization, "Error serializing message. No schema registry is configured (schema.registry.url).")
	}
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(cx, method, sc.url+path, rd)
	if err != nil {
		return errf(codeSerialization, "Error serializing message. %v", err)
	}
	req.Header.Set("Accept", "application/vnd.schemaregistry.v1+json")
	if body != nil {
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	}
	resp, err := sc.http.Do(req)
	if err != nil {
		return errf(codeRequestTimeout, "Error serializing message. Schema registry unreachable: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode/100 != 2 {
		var e errorBody
		json.Unmarshal(b, &e)
		if resp.StatusCode == http.StatusNotFound {
			return errf(codeSchemaNotFound, "Schema not found: %s", e.Message)
		}
		if e.ErrorCode == 0 {
			// Not the registry's error shape (a 401 of its HTTP layer):
			// the status says what happened.
			return errf(codeSerialization, "Error serializing message. Schema registry: %s %s", resp.Status, strings.TrimSpace(string(b)))
		}
		return errf(codeSerialization, "Error serializing message. Schema registry: %d %s", e.ErrorCode, e.Message)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return errf(codeSerialization, "Error serializing message. Schema registry answer: %v", err)
	}
	return nil
}

// codeSchemaNotFound: a schema id, subject or version the registry does
// not have (Confluent's serializer refuses the record: 42207).
const codeSchemaNotFound = codeSerialization

func (sc *schemaClient) cached(id int) *registeredSchema {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.ids[id]
}

// compile makes the schema's codec and caches it under its id, the
// schema's references fetched first (their named types, documents or
// imports). JSONSCHEMA and PROTOBUF use the registry's own codecs.
func (sc *schemaClient) compile(cx context.Context, id, version int, schemaType, schema string, refs []schemaReference) (*registeredSchema, error) {
	format := fmtAvro // the registry omits schemaType for Avro
	switch strings.ToUpper(schemaType) {
	case "JSON":
		format = fmtJSONSchema
	case "PROTOBUF":
		format = fmtProtobuf
	}
	deps, err := sc.dependencies(cx, refs, 0)
	if err != nil {
		return nil, err
	}
	var c codec
	switch format {
	case fmtAvro:
		c, err = newAvroCodec(schema, deps)
	case fmtJSONSchema:
		c, err = newJSONSchemaCodec(schema, deps)
	default:
		c, err = newProtobufCodec(schema, deps)
	}
	if err != nil {
		return nil, errf(codeInvalidSchema, "Invalid schema: %v", err)
	}
	sc.mu.Lock()
	if _, ok := sc.ids[id]; !ok {
		sc.ids[id] = &registeredSchema{id: id, format: format, codec: c}
	}
	sc.mu.Unlock()
	return &registeredSchema{id: id, version: version, format: format, codec: c}, nil
}

// dependencies fetches a schema's references, theirs first.
func (sc *schemaClient) dependencies(cx context.Context, refs []schemaReference, depth int) ([]registry.Dependency, error) {
	if depth > 32 {
		return nil, errf(codeInvalidSchema, "Invalid schema: references nested too deep")
	}
	var out []registry.Dependency
	for _, ref := range refs {
		var r schemaResponse
		if err := sc.call(cx, http.MethodGet, "/subjects/"+url.PathEscape(ref.Subject)+"/versions/"+strconv.Itoa(ref.Version), nil, &r); err != nil {
			return nil, err
		}
		sub, err := sc.dependencies(cx, r.References, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(append(out, sub...), registry.Dependency{Name: ref.Name, Schema: r.Schema})
	}
	return out, nil
}

func (sc *schemaClient) byID(cx context.Context, id int) (*registeredSchema, error) {
	if s := sc.cached(id); s != nil {
		return s, nil
	}
	var r schemaResponse
	if err := sc.call(cx, http.MethodGet, "/schemas/ids/"+strconv.Itoa(id), nil, &r); err != nil {
		return nil, err
	}
	return sc.compile(cx, id, 0, r.SchemaType, r.Schema, r.References)
}

func (sc *schemaClient) byVersion(cx context.Context, subject string, version int) (*registeredSchema, error) {
	return sc.subjectVersion(cx, subject, strconv.Itoa(version))
}

func (sc *schemaClient) latest(cx context.Context, subject string) (*registeredSchema, error) {
	return sc.subjectVersion(cx, subject, "latest")
}

func (sc *schemaClient) subjectVersion(cx context.Context, subject, version string) (*registeredSchema, error) {
	var r schemaResponse
	if err := sc.call(cx, http.MethodGet, "/subjects/"+url.PathEscape(subject)+"/versions/"+version, nil, &r); err != nil {
		return nil, err
	}
	return sc.compile(cx, r.ID, r.Version, r.SchemaType, r.Schema, r.References)
}

// register registers a raw schema under subject (or finds it registered)
// and returns it with its id.
func (sc *schemaClient) register(cx context.Context, subject, format, schema string) (*registeredSchema, error) {
	body := map[string]string{"schema": schema}
	switch format {
	case fmtJSONSchema:
		body["schemaType"] = "JSON"
	case fmtProtobuf:
		body["schemaType"] = "PROTOBUF"
	}
	var r struct {
		ID int `json:"id"`
	}
	if err := sc.call(cx, http.MethodPost, "/subjects/"+url.PathEscape(subject)+"/versions", body, &r); err != nil {
		return nil, err
	}
	return sc.compile(cx, r.ID, 0, body["schemaType"], schema, nil)
}

// decodeWire splits Confluent's wire format into the schema id and the
// payload.
func decodeWire(b []byte) (int, []byte, error) {
	if len(b) < 5 || b[0] != 0 {
		return 0, nil, fmt.Errorf("not in the schema registry's wire format (magic byte 0 and a schema id)")
	}
	return int(b[1])<<24 | int(b[2])<<16 | int(b[3])<<8 | int(b[4]), b[5:], nil
}
