package restproxy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
)

// Embedded formats (Confluent's EmbeddedFormat).
const (
	fmtBinary     = "BINARY"
	fmtJSON       = "JSON"
	fmtString     = "STRING"
	fmtAvro       = "AVRO"
	fmtJSONSchema = "JSONSCHEMA"
	fmtProtobuf   = "PROTOBUF"
)

// isSchemaFormat reports whether the format goes through the registry.
func isSchemaFormat(f string) bool { return f == fmtAvro || f == fmtJSONSchema || f == fmtProtobuf }

// dataSpec is a v3 record's key or value: its format, its schema and its
// data (ProduceRequestData).
type dataSpec struct {
	Type                string          `json:"type"`
	Subject             string          `json:"subject"`
	SubjectNameStrategy string          `json:"subject_name_strategy"`
	SchemaID            *int            `json:"schema_id"`
	SchemaVersion       *int            `json:"schema_version"`
	Schema              *string         `json:"schema"`
	Data                json.RawMessage `json:"data"`
}

// encoded is a key or value ready for Kafka, with what its report says.
type encoded struct {
	bytes         []byte
	format        string
	subject       string
	schemaID      *int
	schemaVersion *int
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// encodeData turns a key or value into its bytes: BINARY is base64, JSON
// the compacted JSON, STRING the string's UTF-8; AVRO, JSONSCHEMA and
// PROTOBUF go through the registry and carry its wire format (magic byte 0,
// the 4-byte schema id, the payload).
func (p *Proxy) encodeData(cx context.Context, topic string, isKey bool, d *dataSpec) (encoded, error) {
	if d == nil {
		return encoded{}, nil
	}
	format := strings.ToUpper(d.Type)
	if format == "" {
		if d.SchemaID == nil && d.SchemaVersion == nil && d.Schema == nil && d.Subject == "" {
			format = fmtJSON // without a type or a schema, the data is JSON
		}
	}
	switch format {
	case fmtBinary:
		if isNull(d.Data) {
			return encoded{format: format}, nil
		}
		var s string
		if err := json.Unmarshal(d.Data, &s); err != nil {
			return encoded{}, errf(codeSerialization, "Error serializing message. BINARY data must be a base64 string: %v", err)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return encoded{}, errf(codeSerialization, "Error serializing message. BINARY data is not valid base64: %v", err)
		}
		return encoded{bytes: b, format: format}, nil
	case fmtJSON:
		if isNull(d.Data) {
			return encoded{format: format}, nil
		}
		b, err := compactJSON(d.Data)
		if err != nil {
			return encoded{}, errf(codeSerialization, "Error serializing message. %v", err)
		}
		return encoded{bytes: b, format: format}, nil
	case fmtString:
		if isNull(d.Data) {
			return encoded{format: format}, nil
		}
		var s string
		if err := json.Unmarshal(d.Data, &s); err != nil {
			return encoded{}, errf(codeSerialization, "Error serializing message. STRING data must be a JSON string: %v", err)
		}
		return encoded{bytes: []byte(s), format: format}, nil
	case "", fmtAvro, fmtJSONSchema, fmtProtobuf:
		return p.encodeWithSchema(cx, topic, isKey, format, d)
	}
	return encoded{}, errPayload("Unknown embedded format %q.", d.Type)
}

// encodeWithSchema resolves the schema (schema_id; subject and
// schema_version; a raw schema registered under the subject; or the
// subject's latest, the subject defaulting to <topic>-key or <topic>-value
// as Confluent's TopicNameStrategy) and serializes the data with it.
func (p *Proxy) encodeWithSchema(cx context.Context, topic string, isKey bool, format string, d *dataSpec) (encoded, error) {
	if d.SubjectNameStrategy != "" && !strings.EqualFold(d.SubjectNameStrategy, "TOPIC_NAME") {
		return encoded{}, errPayload("subject_name_strategy %q is not supported (only TOPIC_NAME).", d.SubjectNameStrategy)
	}
	subject := d.Subject
	if subject == "" {
		subject = topic + "-value"
		if isKey {
			subject = topic + "-key"
		}
	}
	var (
		s   *registeredSchema
		err error
	)
	switch {
	case d.SchemaID != nil:
		s, err = p.schemas.byID(cx, *d.SchemaID)
	case d.Schema != nil:
		if format == "" {
			return encoded{}, errPayload("A raw schema needs the type (AVRO, JSONSCHEMA or PROTOBUF).")
		}
		s, err = p.schemas.register(cx, subject, format, *d.Schema)
	case d.SchemaVersion != nil:
		s, err = p.schemas.byVersion(cx, subject, *d.SchemaVersion)
	default:
		s, err = p.schemas.latest(cx, subject)
	}
	if err != nil {
		return encoded{}, err
	}
	if format != "" && s.format != format {
		return encoded{}, errPayload("Schema %d is %s, not %s.", s.id, s.format, format)
	}
	payload, err := s.codec.encode(d.Data)
	if err != nil {
		return encoded{}, err
	}
	id := s.id
	e := encoded{bytes: wireFormat(id, payload), format: s.format, subject: subject, schemaID: &id}
	if s.version > 0 {
		v := s.version
		e.schemaVersion = &v
	}
	return e, nil
}

// wireFormat is Confluent's serialized form: magic byte 0, the schema id
// big-endian, the payload.
func wireFormat(id int, payload []byte) []byte {
	b := make([]byte, 5+len(payload))
	b[1], b[2], b[3], b[4] = byte(id>>24), byte(id>>16), byte(id>>8), byte(id)
	copy(b[5:], payload)
	return b
}

// compactJSON is data, valid JSON already (encoding/json checked the
// whole request before it filled the json.RawMessage), without insignificant whitespace, as the record's bytes. Data with
// no whitespace byte at all is compact and is returned as it is, saving
// a third pass over every byte on the streaming path; JSON strings cannot
// hold a raw tab or line break, so only a space inside a string sends
// compact data through json.Compact, which returns it unchanged.
func compactJSON(data []byte) ([]byte, error) {
	if !bytes.ContainsAny(data, " \t\n\r") {
		return data, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
