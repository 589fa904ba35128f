package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/vltava/vltava/internal/registry"
)

// RegistryConfig configures a schema-registry serde (RegistrySerde), with
// the settings of Confluent's KafkaAvroSerde, KafkaJsonSchemaSerde and
// KafkaProtobufSerde.
type RegistryConfig struct {
	// URL (schema.registry.url) is the registry's base URL. Required.
	URL string
	// SchemaType is AVRO (the default when empty), JSON or PROTOBUF.
	SchemaType string
	// Schema is the writer schema's text. Serialize registers it (or, with
	// AutoRegisterDisabled, looks it up) under the topic's subject. A serde
	// that only deserializes may leave it empty.
	Schema string
	// IsKey makes the serde one for record keys: the subject is
	// <topic>-key instead of <topic>-value (Confluent's
	// TopicNameStrategy).
	IsKey bool
	// AutoRegisterDisabled is auto.register.schemas=false: Serialize looks
	// Schema up under the subject and fails if it is not registered there,
	// instead of registering it.
	AutoRegisterDisabled bool
	// ClientOptions are passed to franz-go's registry client (basic auth,
	// TLS, an HTTP client of its own).
	ClientOptions []sr.ClientOpt
}

// registryTimeout bounds each registry request a serde makes.
const registryTimeout = 30 * time.Second

// registrySerde writes and reads the registry's wire format: a magic byte
// 0, the schema's id as 4 big-endian bytes, then the schema's encoding of
// the value. A value goes through its JSON form (encoding/json) on the way:
// Avro's JSON encoding (a nullable union's value plain), a JSON Schema
// document, or protojson.
type registrySerde[T any] struct {
	cfg    RegistryConfig
	cl     *sr.Client
	writer registry.Codec // nil without a Schema
	typ    sr.SchemaType

	mu struct {
		sync.Mutex
		ids    map[string]int         // subject -> id of Schema under it
		codecs map[int]registry.Codec // schema id -> its codec
	}
}

// RegistrySerde is a serde of T in a schema registry's wire format
// (Confluent's Avro, JSON Schema and Protobuf serdes). Serialize turns a T
// into its JSON form with encoding/json, encodes that with cfg.Schema and
// prefixes the schema's id under the topic's subject; Deserialize fetches
// the writer's schema by the record's id, decodes the payload to JSON and
// unmarshals that into a T. Schemas and ids are cached: the registry is
// asked once per subject and once per id. An invalid cfg.Schema, type or
// URL fails here; a value the schema does not accept, or a registry that
// refuses or cannot be reached, fails the record's Serialize.
func RegistrySerde[T any](cfg RegistryConfig) (Serde[T], error) {
	if cfg.URL == "" {
		return nil, errors.New("streams: registry serde: schema.registry.url is required")
	}
	s := &registrySerde[T]{cfg: cfg}
	switch strings.ToUpper(cfg.SchemaType) {
	case "", "AVRO":
		s.typ = sr.TypeAvro
	case "JSON":
		s.typ = sr.TypeJSON
	case "PROTOBUF":
		s.typ = sr.TypeProtobuf
	default:
		return nil, fmt.Errorf("streams: registry serde: schema type %q: want AVRO, JSON or PROTOBUF", cfg.SchemaType)
	}
	if cfg.Schema != "" {
		c, err := registry.NewCodec(s.typ.String(), cfg.Schema, nil)
		if err != nil {
			return nil, fmt.Errorf("streams: registry serde: invalid %s schema: %w", s.typ, err)
		}
		s.writer = c
	}
	cl, err := sr.NewClient(append([]sr.ClientOpt{sr.URLs(cfg.URL)}, cfg.ClientOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("streams: registry serde: %w", err)
	}
	s.cl = cl
	s.mu.ids = map[string]int{}
	s.mu.codecs = map[int]registry.Codec{}
	return s, nil
}

func (s *registrySerde[T]) subject(topic string) string {
	if s.cfg.IsKey {
		return topic + "-key"
	}
	return topic + "-value"
}

// Serialize encodes v with the writer schema and prefixes its id.
func (s *registrySerde[T]) Serialize(topic string, v T) ([]byte, error) {
	if s.writer == nil {
		return nil, fmt.Errorf("streams: registry serde for %q: no writer schema (RegistryConfig.Schema)", topic)
	}
	doc, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("streams: registry serde for %q: %w", topic, err)
	}
	payload, err := s.writer.Encode(doc)
	if err != nil {
		return nil, fmt.Errorf("streams: registry serde for %q: the %s schema does not accept the value: %w", topic, s.typ, err)
	}
	id, err := s.writerID(topic)
	if err != nil {
		return nil, err
	}
	return registry.EncodeWire(id, payload), nil
}

// writerID is the writer schema's id under topic's subject, asked of the
// registry once (outside the lock; two callers racing both ask, and get
// the same id).
func (s *registrySerde[T]) writerID(topic string) (int, error) {
	subject := s.subject(topic)
	s.mu.Lock()
	id, ok := s.mu.ids[subject]
	s.mu.Unlock()
	if ok {
		return id, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	schema := sr.Schema{Schema: s.cfg.Schema, Type: s.typ}
	var err error
	if s.cfg.AutoRegisterDisabled {
		var ss sr.SubjectSchema
		ss, err = s.cl.LookupSchema(ctx, subject, schema)
		id = ss.ID
	} else {
		id, err = s.cl.RegisterSchema(ctx, subject, schema, -1, -1)
	}
	if err != nil {
		what := "registering"
		if s.cfg.AutoRegisterDisabled {
			what = "looking up"
		}
		return 0, fmt.Errorf("streams: registry serde: %s the schema under subject %q: %w", what, subject, err)
	}
	s.mu.Lock()
	s.mu.ids[subject] = id
	s.mu.Unlock()
	return id, nil
}

// Deserialize decodes b with the schema its id names.
func (s *registrySerde[T]) Deserialize(topic string, b []byte) (T, error) {
	var v T
	id, payload, err := registry.DecodeWire(b)
	if err != nil {
		return v, fmt.Errorf("streams: registry serde for %q: %w", topic, err)
	}
	c, err := s.codec(id)
	if err != nil {
		return v, fmt.Errorf("streams: registry serde for %q: %w", topic, err)
	}
	doc, err := c.Decode(payload)
	if err != nil {
		return v, fmt.Errorf("streams: registry serde for %q: decoding with schema %d: %w", topic, id, err)
	}
	if err := json.Unmarshal(doc, &v); err != nil {
		return v, fmt.Errorf("streams: registry serde for %q: schema %d's value does not fit %T: %w", topic, id, v, err)
	}
	return v, nil
}

// codec is schema id's codec, fetched (with its references) and compiled
// once.
func (s *registrySerde[T]) codec(id int) (registry.Codec, error) {
	s.mu.Lock()
	c, ok := s.mu.codecs[id]
	s.mu.Unlock()
	if ok {
		return c, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	sch, err := s.cl.SchemaByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("fetching schema %d: %w", id, err)
	}
	deps, err := s.dependencies(ctx, sch.References, 0)
	if err != nil {
		return nil, fmt.Errorf("schema %d: %w", id, err)
	}
	c, err = registry.NewCodec(sch.Type.String(), sch.Schema, deps)
	if err != nil {
		return nil, fmt.Errorf("schema %d: %w", id, err)
	}
	s.mu.Lock()
	s.mu.codecs[id] = c
	s.mu.Unlock()
	return c, nil
}

// dependencies resolves references transitively, dependencies first.
func (s *registrySerde[T]) dependencies(ctx context.Context, refs []sr.SchemaReference, depth int) ([]registry.Dependency, error) {
	if depth > 32 {
		return nil, errors.New("schema references nested too deep")
	}
	var out []registry.Dependency
	for _, ref := range refs {
		ss, err := s.cl.SchemaByVersion(ctx, ref.Subject, ref.Version)
		if err != nil {
			return nil, fmt.Errorf("fetching reference %s version %d: %w", ref.Subject, ref.Version, err)
		}
		sub, err := s.dependencies(ctx, ss.References, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(append(out, sub...), registry.Dependency{Name: ref.Name, Schema: ss.Schema.Schema})
	}
	return out, nil
}
