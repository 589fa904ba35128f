// Package json is Kafka Connect's JSON converter
// (org.apache.kafka.connect.json.JsonConverter), as a record converter and a
// header converter, and the simple header converter
// (org.apache.kafka.connect.storage.SimpleHeaderConverter).
//
// With schemas.enable=true (the default) a value is written as Kafka writes
// it, an envelope {"schema":…,"payload":…} whose schema has Kafka's JSON
// form (type, fields/items/keys/values, optional, name, version, doc,
// parameters, default; a struct field's name under "field"). Logical types
// are written as their underlying type: Decimal as base64 bytes of the
// unscaled value (or a JSON number with decimal.format=NUMERIC), Date as
// days, Time as milliseconds of the day, Timestamp as epoch milliseconds.
package json

import (
	"bytes"
	gojson "encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/vltava/vltava/connect"
)

// Class is the converter's class name.
const Class = "org.apache.kafka.connect.json.JsonConverter"

const version = "1.0"

func init() {
	connect.RegisterConverter(Class, version, func() connect.Converter { return New() })
}

// Config is the converter's configuration definition, with Kafka's names
// and defaults.
func Config() *connect.ConfigDef {
	return connect.NewConfigDef().
		Define(connect.ConfigKey{Name: "schemas.enable", Type: connect.TypeBoolean, Default: true, Importance: connect.High,
			Doc: "Include schemas within each of the serialized values and keys."}).
		Define(connect.ConfigKey{Name: "schemas.cache.size", Type: connect.TypeInt, Default: int32(1000), Importance: connect.High,
			Check: connect.InRange(0, 1<<31-1), Doc: "The maximum number of schemas that can be cached in this converter instance."}).
		Define(connect.ConfigKey{Name: "decimal.format", Type: connect.TypeString, Default: "BASE64", Importance: connect.Low,
			Check: connect.OneOf(true, "BASE64", "NUMERIC"), Doc: "Controls which format this converter will serialize decimals in: BASE64 or NUMERIC."}).
		Define(connect.ConfigKey{Name: "replace.null.with.default", Type: connect.TypeBoolean, Default: true, Importance: connect.Low,
			Doc: "Whether to replace fields that have a default value and that are null to the default value."}).
		Define(connect.ConfigKey{Name: "converter.type", Type: connect.TypeString, Default: "value", Importance: connect.Low,
			Check: connect.OneOf(true, "key", "value", "header"), Doc: "How this converter will be used."})
}

// Converter is the JSON converter. It is safe for concurrent use once
// configured.
type Converter struct {
	schemasEnabled         bool
	decimalNumeric         bool
	replaceNullWithDefault bool

	cache *schemaCache
}

// New makes a converter with Kafka's defaults (schemas enabled).
func New() *Converter {
	return &Converter{schemasEnabled: true, replaceNullWithDefault: true, cache: newSchemaCache(1000)}
}

// Configure implements connect.Converter.
func (c *Converter) Configure(props map[string]string, isKey bool) error {
	p, err := Config().Parse(props)
	if err != nil {
		return err
	}
	c.schemasEnabled = p["schemas.enable"].(bool)
	c.decimalNumeric = strings.EqualFold(p["decimal.format"].(string), "NUMERIC")
	c.replaceNullWithDefault = p["replace.null.with.default"].(bool)
	c.cache = newSchemaCache(int(p["schemas.cache.size"].(int32)))
	return nil
}

// FromConnectData implements connect.Converter.
func (c *Converter) FromConnectData(topic string, headers []connect.Header, schema *connect.Schema, value any) ([]byte, error) {
	if schema == nil && value == nil {
		return nil, nil
	}
	var b bytes.Buffer
	if c.schemasEnabled {
		b.WriteString(`{"schema":`)
		if err := c.schemaJSON(&b, schema); err != nil {
			return nil, fmt.Errorf("Converting Kafka Connect data to byte[] failed due to serialization error of topic %s: %w", topic, err)
		}
		b.WriteString(`,"payload":`)
	}
	if err := c.writeValue(&b, schema, value); err != nil {
		return nil, fmt.Errorf("Converting Kafka Connect data to byte[] failed due to serialization error of topic %s: %w", topic, err)
	}
	if c.schemasEnabled {
		b.WriteByte('}')
	}
	return b.Bytes(), nil
}

// ToConnectData implements connect.Converter.
func (c *Converter) ToConnectData(topic string, headers []connect.Header, data []byte) (*connect.Schema, any, error) {
	if data == nil {
		return nil, nil, nil
	}
	if c.schemasEnabled {
		if schema, out, handled, err := c.toConnectEnvelope(data); handled {
			return schema, out, err
		}
	}
	v, err := decode(data)
	if err != nil {
		return nil, nil, &DataError{Msg: "Converting byte[] to Kafka Connect data failed due to serialization error: " + err.Error()}
	}
	if !c.schemasEnabled {
		out, err := c.toConnect(nil, v)
		return nil, out, err
	}
	env, ok := v.(map[string]any)
	_, hasSchema := env[envelopeSchema]
	_, hasPayload := env[envelopePayload]
	if !ok || len(env) != 2 || !hasSchema || !hasPayload {
		return nil, nil, dataErr(`JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter configuration.`)
	}
	schema, err := c.cachedSchema(env[envelopeSchema])
	if err != nil {
		return nil, nil, err
	}
	out, err := c.toConnect(schema, env[envelopePayload])
	if err != nil {
		return nil, nil, err
	}
	return schema, out, nil
}

// toConnectEnvelope is ToConnectData's path for the common case, an object
// holding exactly "schema" and "payload": the schema is found in the cache
// by its bytes as they are, so only the payload is decoded into values.
// handled is false for anything else (not an object, other fields,
// malformed), which the general path then reports as it always has.
func (c *Converter) toConnectEnvelope(data []byte) (schema *connect.Schema, out any, handled bool, err error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, nil, false, nil
	}
	var env map[string]gojson.RawMessage
	d := gojson.NewDecoder(bytes.NewReader(data))
	if d.Decode(&env) != nil || d.More() || len(env) != 2 {
		return nil, nil, false, nil
	}
	rawSchema, hasSchema := env[envelopeSchema]
	rawPayload, hasPayload := env[envelopePayload]
	if !hasSchema || !hasPayload {
		return nil, nil, false, nil
	}
	if schema, err = c.cachedSchemaBytes(rawSchema); err != nil {
		return nil, nil, true, err
	}
	payload, err := decode(rawPayload)
	if err != nil {
		return nil, nil, true, &DataError{Msg: "Converting byte[] to Kafka Connect data failed due to serialization error: " + err.Error()}
	}
	if out, err = c.toConnect(schema, payload); err != nil {
		return nil, nil, true, err
	}
	return schema, out, true, nil
}

// cachedSchemaBytes is cachedSchema for a schema given as JSON text: the
// text itself is a cache key too, so a producer writing the same schema
// bytes on every record (every JsonConverter does) costs one map lookup.
func (c *Converter) cachedSchemaBytes(raw []byte) (*connect.Schema, error) {
	key := "raw:" + string(raw)
	if s, ok := c.cache.fromJSON(key); ok {
		return s, nil
	}
	v, err := decode(raw)
	if err != nil {
		return nil, &DataError{Msg: "Converting byte[] to Kafka Connect data failed due to serialization error: " + err.Error()}
	}
	s, err := c.cachedSchema(v)
	if err != nil || s == nil {
		return s, err
	}
	c.cache.putSchema(key, s)
	return s, nil
}

// decode parses JSON keeping numbers exact; trailing data is an error.
func decode(data []byte) (any, error) {
	d := gojson.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

func (c *Converter) schemaJSON(b *bytes.Buffer, s *connect.Schema) error {
	if s == nil {
		b.WriteString("null")
		return nil
	}
	if cached, ok := c.cache.toJSON(s); ok {
		b.Write(cached)
		return nil
	}
	var sb bytes.Buffer
	if err := c.writeSchema(&sb, s, ""); err != nil {
		return err
	}
	c.cache.putJSON(s, sb.Bytes())
	b.Write(sb.Bytes())
	return nil
}

func (c *Converter) cachedSchema(v any) (*connect.Schema, error) {
	if v == nil {
		return nil, nil
	}
	key, err := gojson.Marshal(v) // canonical: map keys sorted
	if err != nil {
		return nil, dataErr(err.Error())
	}
	if s, ok := c.cache.fromJSON(string(key)); ok {
		return s, nil
	}
	s, err := c.parseSchema(v)
	if err != nil {
		return nil, err
	}
	c.cache.putSchema(string(key), s)
	return s, nil
}

// schemaCache holds up to size converted schemas each way, evicting the
// least recently added (Kafka's converter uses an LRU of the same size).
type schemaCache struct {
	size int
	mu   sync.Mutex // guards the maps and orders
	out  map[*connect.Schema][]byte
	outQ []*connect.Schema
	in   map[string]*connect.Schema
	inQ  []string
}

func newSchemaCache(size int) *schemaCache {
	return &schemaCache{size: size, out: map[*connect.Schema][]byte{}, in: map[string]*connect.Schema{}}
}

func (sc *schemaCache) toJSON(s *connect.Schema) ([]byte, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	b, ok := sc.out[s]
	return b, ok
}

func (sc *schemaCache) putJSON(s *connect.Schema, b []byte) {
	if sc.size == 0 {
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if _, ok := sc.out[s]; ok {
		return
	}
	if len(sc.outQ) >= sc.size {
		delete(sc.out, sc.outQ[0])
		sc.outQ = sc.outQ[1:]
	}
	sc.out[s] = append([]byte(nil), b...)
	sc.outQ = append(sc.outQ, s)
}

func (sc *schemaCache) fromJSON(key string) (*connect.Schema, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	s, ok := sc.in[key]
	return s, ok
}

func (sc *schemaCache) putSchema(key string, s *connect.Schema) {
	if sc.size == 0 {
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if _, ok := sc.in[key]; ok {
		return
	}
	if len(sc.inQ) >= sc.size {
		delete(sc.in, sc.inQ[0])
		sc.inQ = sc.inQ[1:]
	}
	sc.in[key] = s
	sc.inQ = append(sc.inQ, key)
}
