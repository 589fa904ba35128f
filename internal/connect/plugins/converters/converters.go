// Package converters holds Kafka Connect's StringConverter
// (org.apache.kafka.connect.storage.StringConverter) and ByteArrayConverter
// (org.apache.kafka.connect.converters.ByteArrayConverter). Each is a
// converter and a header converter, as in Kafka.
package converters

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/vltava/vltava/connect"
)

// The class names.
const (
	StringClass    = "org.apache.kafka.connect.storage.StringConverter"
	ByteArrayClass = "org.apache.kafka.connect.converters.ByteArrayConverter"
	version        = "4.0.0"
)

func init() {
	connect.RegisterConverter(StringClass, version, func() connect.Converter { return &String{} })
	connect.RegisterConverter(ByteArrayClass, version, func() connect.Converter { return &ByteArray{} })
}

var (
	optionalString = &connect.Schema{Type: connect.String, Optional: true}
	optionalBytes  = &connect.Schema{Type: connect.Bytes, Optional: true}
)

// String converts to and from UTF-8 strings: any value is written as its
// string form, bytes are read as a string (converter.encoding: UTF-8 only).
type String struct{}

// Configure implements connect.Converter.
func (c *String) Configure(props map[string]string, _ bool) error { return c.configure(props) }

func (c *String) configure(props map[string]string) error {
	for _, k := range []string{"converter.encoding", "key.converter.encoding", "value.converter.encoding", "header.converter.encoding"} {
		if e, ok := props[k]; ok && !strings.EqualFold(strings.ReplaceAll(e, "-", ""), "UTF8") {
			return fmt.Errorf("%s=%s: only UTF-8 is supported", k, e)
		}
	}
	return nil
}

// FromConnectData implements connect.Converter.
func (c *String) FromConnectData(_ string, _ []connect.Header, _ *connect.Schema, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	switch x := v.(type) {
	case string:
		return []byte(x), nil
	case []byte:
		return x, nil
	}
	return []byte(fmt.Sprint(v)), nil
}

// ToConnectData implements connect.Converter.
func (c *String) ToConnectData(_ string, _ []connect.Header, data []byte) (*connect.Schema, any, error) {
	if data == nil {
		return optionalString, nil, nil
	}
	if !utf8.Valid(data) {
		return nil, nil, fmt.Errorf("failed to deserialize data to a string: not valid UTF-8")
	}
	return optionalString, string(data), nil
}

// AsHeaderConverter implements connect.HeaderConverterProvider.
func (c *String) AsHeaderConverter() connect.HeaderConverter { return stringHeaders{c} }

type stringHeaders struct{ c *String }

func (h stringHeaders) Configure(props map[string]string) error { return h.c.configure(props) }
func (h stringHeaders) FromConnectHeader(topic, _ string, s *connect.Schema, v any) ([]byte, error) {
	return h.c.FromConnectData(topic, nil, s, v)
}
func (h stringHeaders) ToConnectHeader(topic, _ string, data []byte) (*connect.Schema, any, error) {
	return h.c.ToConnectData(topic, nil, data)
}

// ByteArray passes bytes through unchanged; any other value is an error.
type ByteArray struct{}

// Configure implements connect.Converter.
func (c *ByteArray) Configure(map[string]string, bool) error { return nil }

// FromConnectData implements connect.Converter.
func (c *ByteArray) FromConnectData(_ string, _ []connect.Header, s *connect.Schema, v any) ([]byte, error) {
	if s != nil && s.Type != connect.Bytes {
		return nil, fmt.Errorf("invalid schema type for ByteArrayConverter: %s", s.Type)
	}
	if v == nil {
		return nil, nil
	}
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("ByteArrayConverter is not compatible with objects of type %T", v)
	}
	return b, nil
}

// ToConnectData implements connect.Converter.
func (c *ByteArray) ToConnectData(_ string, _ []connect.Header, data []byte) (*connect.Schema, any, error) {
	if data == nil {
		return optionalBytes, nil, nil
	}
	return optionalBytes, data, nil
}

// AsHeaderConverter implements connect.HeaderConverterProvider.
func (c *ByteArray) AsHeaderConverter() connect.HeaderConverter { return bytesHeaders{c} }

type bytesHeaders struct{ c *ByteArray }

func (h bytesHeaders) Configure(map[string]string) error { return nil }
func (h bytesHeaders) FromConnectHeader(topic, _ string, s *connect.Schema, v any) ([]byte, error) {
	return h.c.FromConnectData(topic, nil, s, v)
}
func (h bytesHeaders) ToConnectHeader(topic, _ string, data []byte) (*connect.Schema, any, error) {
	return h.c.ToConnectData(topic, nil, data)
}
