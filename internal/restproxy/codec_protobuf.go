package restproxy

import (
	"encoding/json"

	"github.com/vltava/vltava/internal/registry"
)

// protobufCodec is the registry's Protobuf codec (protocompile,
// protojson): a record's JSON is the protojson form of the schema's first
// message, the payload its message indexes ([0], the single byte 0) and
// the binary message, as Confluent's Protobuf serializer writes it.
type protobufCodec struct{ c registry.Codec }

func newProtobufCodec(schema string, deps []registry.Dependency) (*protobufCodec, error) {
	c, err := registry.NewCodec("PROTOBUF", schema, deps)
	if err != nil {
		return nil, err
	}
	return &protobufCodec{c}, nil
}

func (c *protobufCodec) encode(data json.RawMessage) ([]byte, error) {
	b, err := c.c.Encode(data)
	if err != nil {
		return nil, errf(codeSerialization, "Error serializing message. JSON does not match the Protobuf schema: %v", err)
	}
	return b, nil
}

func (c *protobufCodec) decode(payload []byte) (json.RawMessage, error) {
	b, err := c.c.Decode(payload)
	if err != nil {
		return nil, errf(codeSerialization, "Error deserializing Protobuf message: %v", err)
	}
	return json.RawMessage(b), nil
}
