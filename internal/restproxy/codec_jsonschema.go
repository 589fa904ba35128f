package restproxy

import (
	"bytes"
	"encoding/json"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// jsonSchemaCodec validates a record's JSON against its JSON Schema
// (santhosh-tekuri/jsonschema); the payload is the compacted JSON.
type jsonSchemaCodec struct{ schema *jsonschema.Schema }

func newJSONSchemaCodec(schema string) (*jsonSchemaCodec, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(schema)))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		return nil, err
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		return nil, err
	}
	return &jsonSchemaCodec{schema: s}, nil
}

func (c *jsonSchemaCodec) encode(data json.RawMessage) ([]byte, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, errf(codeJSONConversion, "Conversion of JSON to Object failed: %v", err)
	}
	if err := c.schema.Validate(v); err != nil {
		return nil, errf(codeSerialization, "Error serializing message. JSON does not match the schema: %v", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return nil, errf(codeJSONConversion, "Conversion of JSON to Object failed: %v", err)
	}
	return buf.Bytes(), nil
}

func (c *jsonSchemaCodec) decode(payload []byte) (json.RawMessage, error) {
	if !json.Valid(payload) {
		return nil, errf(codeSerialization, "payload is not JSON")
	}
	return json.RawMessage(payload), nil
}
