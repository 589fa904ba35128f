package transforms

import (
	"fmt"
	"strings"

	"github.com/vltava/vltava/connect"
)

func init() {
	registerBoth("ReplaceField", func(s side) connect.Transformation { return &ReplaceField{side: s} })
}

// ReplaceField keeps, drops and renames fields (Kafka's ReplaceField):
// exclude (formerly blacklist) drops, include (formerly whitelist) keeps
// only the named fields, renames maps old:new.
type ReplaceField struct {
	closeNone
	side        side
	exclude     map[string]bool
	include     map[string]bool
	renames     map[string]string
	replaceNull bool
	cache       schemaCache
}

// Config implements connect.Transformation.
func (t *ReplaceField) Config() *connect.ConfigDef {
	return noKeys().
		Define(listKey("exclude", []string{}, "Fields to exclude. This takes precedence over the fields to include.")).
		Define(listKey("include", []string{}, "Fields to include. If specified, only these fields will be used.")).
		Define(listKey("renames", []string{}, "Field rename mappings.")).
		Define(listKey("blacklist", nil, "Deprecated. Use exclude instead.")).
		Define(listKey("whitelist", nil, "Deprecated. Use include instead.")).
		Define(replaceNullKey())
}

// Configure implements connect.Transformation.
func (t *ReplaceField) Configure(props map[string]string) error {
	p, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	// The deprecated names are read when the new ones are not given.
	pick := func(name, old string) []string {
		if _, ok := props[name]; !ok {
			if v, ok := p[old].([]string); ok {
				return v
			}
		}
		return p[name].([]string)
	}
	t.exclude = set(pick("exclude", "blacklist"))
	t.include = set(pick("include", "whitelist"))
	t.renames = map[string]string{}
	for _, m := range p["renames"].([]string) {
		old, nw, ok := strings.Cut(m, ":")
		if !ok || old == "" || nw == "" {
			return fmt.Errorf("Invalid value %s for configuration renames: Invalid rename mapping: %s", props["renames"], m)
		}
		t.renames[old] = nw
	}
	t.replaceNull = p["replace.null.with.default"].(bool)
	return nil
}

func set(l []string) map[string]bool {
	m := make(map[string]bool, len(l))
	for _, s := range l {
		m[s] = true
	}
	return m
}

func (t *ReplaceField) filter(name string) bool {
	return !t.exclude[name] && (len(t.include) == 0 || t.include[name])
}

func (t *ReplaceField) renamed(name string) string {
	if n, ok := t.renames[name]; ok {
		return n
	}
	return name
}

const replacePurpose = "field replacement"

// Apply implements connect.Transformation.
func (t *ReplaceField) Apply(r *connect.Record) (*connect.Record, error) {
	schema, value := t.side.operating(r)
	if value == nil {
		return r, nil
	}
	if schema == nil {
		m, err := requireMap(value, replacePurpose)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(m))
		for k, v := range m {
			if t.filter(k) {
				out[t.renamed(k)] = v
			}
		}
		return t.side.with(r, nil, out), nil
	}
	st, err := requireStruct(value, replacePurpose)
	if err != nil {
		return nil, err
	}
	ns, _ := t.cache.get(st.Schema(), func() (*connect.Schema, error) {
		b := structBasics(st.Schema())
		for _, f := range st.Schema().Fields {
			if t.filter(f.Name) {
				addField(b, t.renamed(f.Name), f.Schema)
			}
		}
		return b, nil
	})
	out := connect.NewStruct(ns)
	for _, f := range st.Schema().Fields {
		if t.filter(f.Name) {
			if err := put(out, t.renamed(f.Name), getRaw(st, f.Name, t.replaceNull)); err != nil {
				return nil, err
			}
		}
	}
	return t.side.with(r, ns, out), nil
}
