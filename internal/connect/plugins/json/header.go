package json

import (
	"github.com/vltava/vltava/connect"
)

// HeaderConverter is the JSON converter used for headers: each header value
// is written as a record value would be (the envelope unless
// schemas.enable=false).
type HeaderConverter struct{ c *Converter }

// AsHeaderConverter implements connect.HeaderConverterProvider: Kafka
// accepts JsonConverter as header.converter too.
func (c *Converter) AsHeaderConverter() connect.HeaderConverter { return &HeaderConverter{c: New()} }

// NewHeaderConverter makes the JSON header converter with Kafka's defaults.
func NewHeaderConverter() *HeaderConverter { return &HeaderConverter{c: New()} }

// Configure implements connect.HeaderConverter.
func (h *HeaderConverter) Configure(props map[string]string) error {
	return h.c.Configure(props, false)
}

// FromConnectHeader implements connect.HeaderConverter.
func (h *HeaderConverter) FromConnectHeader(topic, key string, schema *connect.Schema, value any) ([]byte, error) {
	return h.c.FromConnectData(topic, nil, schema, value)
}

// ToConnectHeader implements connect.HeaderConverter.
func (h *HeaderConverter) ToConnectHeader(topic, key string, data []byte) (*connect.Schema, any, error) {
	return h.c.ToConnectData(topic, nil, data)
}
