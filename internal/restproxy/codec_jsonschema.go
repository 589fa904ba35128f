package restproxy

import (
	"encoding/json"

	"github.com/vltava/vltava/internal/registry"
)

// jsonSchemaCodec validates a record's JSON against its JSON Schema with
// the registry's codec (santhosh-tekuri/jsonschema, its references
// resolved from the registry and nothing loaded from elsewhere); the
// payload is the compacted JSON.
type jsonSchemaCodec struct{ c registry.Codec }

func newJSONSchemaCodec(schema string, deps []registry.Dependency) (*jsonSchemaCodec, error) {
	c, err := registry.NewCodec("JSON", schema, deps)
	if err != nil {
		return nil, err
	}
	return &jsonSchemaCodec{c}, nil
}

func (c *jsonSchemaCodec) encode(data json.RawMessage) ([]byte, error) {
	if !json.Valid(data) {
		return nil, errf(codeJSONConversion, "Conversion of JSON to Object failed: the data is not JSON")
	}
	b, err := c.c.Encode(data)
	if err != nil {
		return nil, errf(codeSerialization, "Error serializing message. JSON does not match the schema: %v", err)
	}
	return b, nil
}

func (c *jsonSchemaCodec) decode(payload []byte) (json.RawMessage, error) {
	if !json.Valid(payload) {
		return nil, errf(codeSerialization, "payload is not JSON")
	}
	return json.RawMessage(payload), nil
}
