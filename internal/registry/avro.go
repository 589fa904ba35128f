package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hamba/avro/v2"
)

// avroSchema is an Avro schema parsed by hamba/avro.
type avroSchema struct {
	schema avro.Schema
	ident  string
}

func parseAvro(text string, deps []dependency, normalize bool) (*avroSchema, error) {
	cache := &avro.SchemaCache{}
	for _, d := range deps {
		if _, err := avro.ParseWithCache(d.Schema, "", cache); err != nil {
			return nil, fmt.Errorf("reference %s: %w", d.Name, err)
		}
	}
	s, err := avro.ParseWithCache(text, "", cache)
	if err != nil {
		return nil, err
	}
	ident := compactJSON(text)
	if normalize {
		b, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		ident = string(b)
	}
	return &avroSchema{schema: s, ident: ident}, nil
}

func (a *avroSchema) identity() string { return a.ident }

func (a *avroSchema) canRead(writer parsedSchema) []string {
	w, ok := writer.(*avroSchema)
	if !ok {
		return []string{"schema type changed"}
	}
	c := avroChecker{seen: map[[2]string]bool{}}
	c.check(a.schema, w.schema, "/")
	return c.msgs
}

// compactJSON removes insignificant whitespace; text that is not JSON
// (an Avro primitive name) is returned trimmed.
func compactJSON(text string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(text)); err != nil {
		return strings.TrimSpace(text)
	}
	return b.String()
}

// avroChecker applies the Avro specification's schema resolution rules
// (reader against writer), recording each mismatch with its location as
// Confluent's AvroCompatibilityChecker words them.
type avroChecker struct {
	msgs []string
	seen map[[2]string]bool // named pairs already being checked (recursive types)
}

func (c *avroChecker) fail(kind, path, format string, args ...any) {
	c.msgs = append(c.msgs, fmt.Sprintf("{errorType:'%s', description:'%s', location:'%s'}", kind, fmt.Sprintf(format, args...), path))
}

func deref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// avroPromotes says whether a writer's primitive type resolves to the
// reader's: the spec's promotions.
func avroPromotes(writer, reader avro.Type) bool {
	if writer == reader {
		return true
	}
	switch writer {
	case avro.Int:
		return reader == avro.Long || reader == avro.Float || reader == avro.Double
	case avro.Long:
		return reader == avro.Float || reader == avro.Double
	case avro.Float:
		return reader == avro.Double
	case avro.String:
		return reader == avro.Bytes
	case avro.Bytes:
		return reader == avro.String
	}
	return false
}

// namesMatch is the spec's rule for named types: the reader's full name
// (or one of its aliases) is the writer's full name.
func namesMatch(reader, writer avro.NamedSchema) bool {
	if reader.FullName() == writer.FullName() || reader.Name() == writer.Name() {
		return true
	}
	return slices.Contains(reader.Aliases(), writer.FullName())
}

// readable reports, without recording, whether reader reads writer.
func (c *avroChecker) readable(reader, writer avro.Schema) bool {
	sub := avroChecker{seen: c.seen}
	sub.check(reader, writer, "/")
	return len(sub.msgs) == 0
}

func (c *avroChecker) check(reader, writer avro.Schema, path string) {
	reader, writer = deref(reader), deref(writer)
	if wu, ok := writer.(*avro.UnionSchema); ok {
		// Every branch the writer may have written must be readable.
		for i, b := range wu.Types() {
			if ru, ok := reader.(*avro.UnionSchema); ok {
				if !c.unionHas(ru, b) {
					c.fail("MISSING_UNION_BRANCH", fmt.Sprintf("%s%d", path, i), "reader union lacking writer type: %s", strings.ToUpper(string(deref(b).Type())))
				}
				continue
			}
			c.check(reader, b, fmt.Sprintf("%s%d", path, i))
		}
		return
	}
	if ru, ok := reader.(*avro.UnionSchema); ok {
		if !c.unionHas(ru, writer) {
			c.fail("MISSING_UNION_BRANCH", path, "reader union lacking writer type: %s", strings.ToUpper(string(writer.Type())))
		}
		return
	}
	rt, wt := reader.Type(), writer.Type()
	if rt != wt && !avroPromotes(wt, rt) {
		c.fail("TYPE_MISMATCH", path, "reader type: %s not compatible with writer type: %s", strings.ToUpper(string(rt)), strings.ToUpper(string(wt)))
		return
	}
	switch r := reader.(type) {
	case *avro.RecordSchema:
		w := writer.(*avro.RecordSchema)
		if !namesMatch(r, w) {
			c.fail("NAME_MISMATCH", path+"name", "expected: %s", w.FullName())
			return
		}
		key := [2]string{r.FullName(), w.FullName()}
		if c.seen[key] {
			return
		}
		c.seen[key] = true
		defer delete(c.seen, key)
		for _, rf := range r.Fields() {
			wf := writerField(w, rf)
			if wf == nil {
				if !rf.HasDefault() {
					c.fail("READER_FIELD_MISSING_DEFAULT_VALUE", path+"fields/"+rf.Name(), "%s", rf.Name())
				}
				continue
			}
			c.check(rf.Type(), wf.Type(), path+"fields/"+rf.Name()+"/type/")
		}
	case *avro.EnumSchema:
		w := writer.(*avro.EnumSchema)
		if !namesMatch(r, w) {
			c.fail("NAME_MISMATCH", path+"name", "expected: %s", w.FullName())
			return
		}
		var missing []string
		for _, s := range w.Symbols() {
			if !slices.Contains(r.Symbols(), s) {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 && !r.HasDefault() {
			c.fail("MISSING_ENUM_SYMBOLS", path+"symbols", "[%s]", strings.Join(missing, ", "))
		}
	case *avro.FixedSchema:
		w := writer.(*avro.FixedSchema)
		if !namesMatch(r, w) {
			c.fail("NAME_MISMATCH", path+"name", "expected: %s", w.FullName())
			return
		}
		if r.Size() != w.Size() {
			c.fail("FIXED_SIZE_MISMATCH", path+"size", "expected: %d, found: %d", w.Size(), r.Size())
		}
	case *avro.ArraySchema:
		c.check(r.Items(), writer.(*avro.ArraySchema).Items(), path+"items/")
	case *avro.MapSchema:
		c.check(r.Values(), writer.(*avro.MapSchema).Values(), path+"values/")
	}
}

// unionHas reports whether some branch of the reader's union reads writer.
func (c *avroChecker) unionHas(ru *avro.UnionSchema, writer avro.Schema) bool {
	for _, b := range ru.Types() {
		if c.readable(b, writer) {
			return true
		}
	}
	return false
}

// writerField is the writer's field a reader field reads: by name, else
// by one of the reader field's aliases.
func writerField(w *avro.RecordSchema, rf *avro.Field) *avro.Field {
	for _, f := range w.Fields() {
		if f.Name() == rf.Name() {
			return f
		}
	}
	for _, f := range w.Fields() {
		if slices.Contains(rf.Aliases(), f.Name()) {
			return f
		}
	}
	return nil
}
