package registry

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// jsonSchemaBase is the base URL the root schema and relative reference
// names resolve against; the compiler never loads anything from it (the
// .invalid name cannot resolve). It is hierarchical so that a relative
// $ref ("address.json") resolves to the reference of that name: against
// an opaque base (a urn:) it would resolve to the root itself.
const jsonSchemaBase = "https://schemas.vltava.invalid/"

// jsonSchema is a JSON Schema compiled by santhosh-tekuri/jsonschema (so it
// is a valid schema of its draft, its references resolvable), with the
// documents kept for the compatibility rules.
type jsonSchema struct {
	root     any
	docs     map[string]any // by resolved URL: the root and every reference
	compiled *jsonschema.Schema
	ident    string
}

func parseJSONSchema(text string, deps []dependency, normalize bool) (*jsonSchema, error) {
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	docs := map[string]any{}
	for _, d := range deps {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(d.Schema))
		if err != nil {
			return nil, fmt.Errorf("reference %s: %w", d.Name, err)
		}
		u := resolveJSONRef(d.Name)
		if err := c.AddResource(u, doc); err != nil {
			return nil, fmt.Errorf("reference %s: %w", d.Name, err)
		}
		docs[u] = doc
	}
	root, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	// A root with an absolute $id resolves relative $refs against it:
	// the relative reference names are found there too.
	if m, ok := root.(map[string]any); ok {
		if id, ok := m["$id"].(string); ok {
			if base, err := url.Parse(id); err == nil && base.IsAbs() && base.Opaque == "" {
				for _, d := range deps {
					ref, err := url.Parse(d.Name)
					if err != nil || ref.IsAbs() {
						continue
					}
					u := base.ResolveReference(ref).String()
					if _, dup := docs[u]; dup || u == resolveJSONRef(d.Name) {
						continue
					}
					if err := c.AddResource(u, docs[resolveJSONRef(d.Name)]); err != nil {
						return nil, fmt.Errorf("reference %s: %w", d.Name, err)
					}
				}
			}
		}
	}
	rootURL := jsonSchemaBase + "root.json"
	if err := c.AddResource(rootURL, root); err != nil {
		return nil, err
	}
	docs[rootURL] = root
	compiled, err := c.Compile(rootURL)
	if err != nil {
		return nil, err
	}
	ident := compactJSON(text)
	if normalize {
		b, err := json.Marshal(root) // maps marshal with sorted keys
		if err != nil {
			return nil, err
		}
		ident = string(b)
	}
	return &jsonSchema{root: root, docs: docs, compiled: compiled, ident: ident}, nil
}

// resolveJSONRef is where a reference name lives: an absolute URL as it
// is, a relative name under the base.
func resolveJSONRef(name string) string {
	if u, err := url.Parse(name); err == nil && u.IsAbs() {
		return name
	}
	return jsonSchemaBase + strings.TrimPrefix(name, "/")
}

// noLoader refuses to fetch: a schema reaches other documents only through
// its registered references.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("%s is not a registered reference", u)
}

// Validate checks an instance (decoded with jsonschema.UnmarshalJSON)
// against the schema.
func (j *jsonSchema) Validate(v any) error { return j.compiled.Validate(v) }

func (j *jsonSchema) identity() string { return j.ident }

func (j *jsonSchema) canRead(writer parsedSchema) []string {
	w, ok := writer.(*jsonSchema)
	if !ok {
		return []string{"schema type changed"}
	}
	c := jsonChecker{reader: j, writer: w, seen: map[[2]string]bool{}}
	c.check(j.root, w.root, jsonSchemaBase+"root.json", jsonSchemaBase+"root.json", "#")
	return c.msgs
}
