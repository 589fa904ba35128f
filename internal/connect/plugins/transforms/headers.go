package transforms

import (
	pjson "github.com/vltava/vltava/internal/connect/plugins/json"

	"github.com/vltava/vltava/connect"
)

func init() {
	connect.RegisterTransformation(pkgPrefix+"DropHeaders", version, func() connect.Transformation { return &DropHeaders{} })
	connect.RegisterTransformation(pkgPrefix+"InsertHeader", version, func() connect.Transformation { return &InsertHeader{} })
	connect.RegisterTransformation(pkgPrefix+"Filter", version, func() connect.Transformation { return &Filter{} })
}

// DropHeaders removes every header with one of the given keys (Kafka's
// DropHeaders).
type DropHeaders struct {
	closeNone
	keys map[string]bool
}

// Config implements connect.Transformation.
func (t *DropHeaders) Config() *connect.ConfigDef {
	return noKeys().Define(connect.ConfigKey{Name: "headers", Type: connect.TypeList, Required: true, Importance: connect.High,
		Check: nonEmptyList, Doc: "The name of the headers to be removed."})
}

// Configure implements connect.Transformation.
func (t *DropHeaders) Configure(props map[string]string) error {
	p, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	t.keys = set(p["headers"].([]string))
	return nil
}

// Apply implements connect.Transformation.
func (t *DropHeaders) Apply(r *connect.Record) (*connect.Record, error) {
	c := *r
	c.Headers = nil
	for _, h := range r.Headers {
		if !t.keys[h.Key] {
			c.Headers = append(c.Headers, h)
		}
	}
	return &c, nil
}

// InsertHeader adds a header whose value is value.literal parsed as Kafka's
// Values.parseString does (Kafka's InsertHeader).
type InsertHeader struct {
	closeNone
	key    string
	schema *connect.Schema
	value  any
}

// Config implements connect.Transformation.
func (t *InsertHeader) Config() *connect.ConfigDef {
	return noKeys().
		Define(connect.ConfigKey{Name: "header", Type: connect.TypeString, Required: true, Importance: connect.High, Doc: "The name of the header."}).
		Define(connect.ConfigKey{Name: "value.literal", Type: connect.TypeString, Required: true, Importance: connect.High,
			Doc: "The literal value that is to be set as the header value on all records."})
}

// Configure implements connect.Transformation.
func (t *InsertHeader) Configure(props map[string]string) error {
	p, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	t.key = p["header"].(string)
	t.schema, t.value = pjson.ParseString(props["value.literal"])
	return nil
}

// Apply implements connect.Transformation.
func (t *InsertHeader) Apply(r *connect.Record) (*connect.Record, error) {
	c := r.Clone()
	c.Headers = append(c.Headers, connect.Header{Key: t.key, Schema: t.schema, Value: t.value})
	return c, nil
}

// Filter drops every record it is applied to; with a predicate it drops
// the records the predicate selects (Kafka's Filter, KIP-585).
type Filter struct{ closeNone }

// Config implements connect.Transformation.
func (*Filter) Config() *connect.ConfigDef { return noKeys() }

// Configure implements connect.Transformation.
func (*Filter) Configure(map[string]string) error { return nil }

// Apply implements connect.Transformation.
func (*Filter) Apply(*connect.Record) (*connect.Record, error) { return nil, nil }
