package cli

import (
	"context"
	"fmt"
	"sync"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/vltava/vltava/internal/registry"
)

// DefaultRegistryURL is where the registry commands and the schema flags
// of produce and consume look by default (the registry's usual port).
const DefaultRegistryURL = "http://127.0.0.1:8081"

// schemaFlags are produce's and consume's --key-schema-id and
// --value-schema-id: records are JSON on the console and the schema
// registry's wire format (magic byte 0, the schema id, the schema's
// encoding: Avro binary, JSON, Protobuf) in the topic.
type schemaFlags struct {
	registryURL    string
	keyID, valueID int
}

func (s *schemaFlags) register(cmd *cobra.Command, verb string) {
	f := cmd.Flags()
	f.StringVar(&s.registryURL, "registry-url", DefaultRegistryURL, "schema registry the schema ids are looked up in")
	f.IntVar(&s.keyID, "key-schema-id", 0, "keys are JSON "+verb+" with the registered schema of this id (Avro, JSON Schema or Protobuf)")
	f.IntVar(&s.valueID, "value-schema-id", 0, "values are JSON "+verb+" with the registered schema of this id (Avro, JSON Schema or Protobuf)")
}

func (s *schemaFlags) enabled() bool { return s.keyID != 0 || s.valueID != 0 }

// schemaCodecs fetches schemas by id (with their references) once each.
type schemaCodecs struct {
	cl     *sr.Client
	mu     sync.Mutex
	codecs map[int]registry.Codec
}

func (s *schemaFlags) codecs() (*schemaCodecs, error) {
	cl, err := sr.NewClient(sr.URLs(s.registryURL))
	if err != nil {
		return nil, fmt.Errorf("--registry-url: %w", err)
	}
	return &schemaCodecs{cl: cl, codecs: map[int]registry.Codec{}}, nil
}

func (c *schemaCodecs) codec(ctx context.Context, id int) (registry.Codec, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if codec, ok := c.codecs[id]; ok {
		return codec, nil
	}
	s, err := c.cl.SchemaByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	deps, err := c.dependencies(ctx, s.References, 0)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	typ := s.Type.String()
	codec, err := registry.NewCodec(typ, s.Schema, deps)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	c.codecs[id] = codec
	return codec, nil
}

// dependencies resolves references depth first, dependencies first.
func (c *schemaCodecs) dependencies(ctx context.Context, refs []sr.SchemaReference, depth int) ([]registry.Dependency, error) {
	if depth > 32 {
		return nil, fmt.Errorf("references nested deeper than 32")
	}
	var out []registry.Dependency
	for _, r := range refs {
		ss, err := c.cl.SchemaByVersion(ctx, r.Subject, r.Version)
		if err != nil {
			return nil, fmt.Errorf("reference %s: %w", r.Name, err)
		}
		sub, err := c.dependencies(ctx, ss.References, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(append(out, sub...), registry.Dependency{Name: r.Name, Schema: ss.Schema.Schema})
	}
	return out, nil
}

// encode turns a record's JSON key and value into the wire format.
func (c *schemaCodecs) encode(ctx context.Context, s *schemaFlags, r *kgo.Record) error {
	for _, f := range []struct {
		id   int
		data *[]byte
		what string
	}{{s.keyID, &r.Key, "key"}, {s.valueID, &r.Value, "value"}} {
		if f.id == 0 || *f.data == nil {
			continue
		}
		codec, err := c.codec(ctx, f.id)
		if err != nil {
			return err
		}
		payload, err := codec.Encode(*f.data)
		if err != nil {
			return fmt.Errorf("%s does not fit schema %d: %w", f.what, f.id, err)
		}
		*f.data = registry.EncodeWire(f.id, payload)
	}
	return nil
}

// decode turns a record's wire-format key and value into JSON, with the
// schema of the id each carries.
func (c *schemaCodecs) decode(ctx context.Context, s *schemaFlags, r *kgo.Record) error {
	for _, f := range []struct {
		on   bool
		data *[]byte
		what string
	}{{s.keyID != 0, &r.Key, "key"}, {s.valueID != 0, &r.Value, "value"}} {
		if !f.on || *f.data == nil {
			continue
		}
		id, payload, err := registry.DecodeWire(*f.data)
		if err != nil {
			return fmt.Errorf("%s at %s[%d] offset %d: %w", f.what, r.Topic, r.Partition, r.Offset, err)
		}
		codec, err := c.codec(ctx, id)
		if err != nil {
			return err
		}
		doc, err := codec.Decode(payload)
		if err != nil {
			return fmt.Errorf("%s at %s[%d] offset %d with schema %d: %w", f.what, r.Topic, r.Partition, r.Offset, id, err)
		}
		*f.data = doc
	}
	return nil
}
