package registry

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// jsonChecker applies Confluent's JSON Schema compatibility rules: the
// reader must accept every instance the writer accepts. Properties added
// to an open content model, a narrowed type, a required property added,
// additionalProperties closed, tighter bounds, a narrowed enum are
// refused; the names of the differences are Confluent's.
type jsonChecker struct {
	reader, writer *jsonSchema
	msgs           []string
	seen           map[[2]string]bool // $ref pairs being checked
	quiet          int                // >0: readable() probing, nothing recorded
	failed         bool
}

func (c *jsonChecker) fail(kind, path string) {
	c.failed = true
	if c.quiet == 0 {
		c.msgs = append(c.msgs, fmt.Sprintf("{errorType:'%s', location:'%s'}", kind, path))
	}
}

// readable reports, without recording, whether r reads w.
func (c *jsonChecker) readable(r, w any, rbase, wbase string) bool {
	saved := c.failed
	c.failed = false
	c.quiet++
	c.check(r, w, rbase, wbase, "#")
	c.quiet--
	ok := !c.failed
	c.failed = saved
	return ok
}

// annotations are keywords that constrain nothing.
var jsonAnnotations = map[string]bool{"title": true, "description": true, "$id": true, "id": true, "$schema": true,
	"default": true, "examples": true, "$comment": true, "definitions": true, "$defs": true, "readOnly": true, "writeOnly": true,
	"deprecated": true}

// jsonAcceptsAll reports whether a schema node accepts every instance.
func jsonAcceptsAll(n any) bool {
	switch v := n.(type) {
	case nil:
		return true
	case bool:
		return v
	case map[string]any:
		for k := range v {
			if !jsonAnnotations[k] {
				return false
			}
		}
		return true
	}
	return false
}

// resolve follows $ref until a node without one, returning it and the
// base its own references resolve against.
func (c *jsonChecker) resolve(n any, base string, docs map[string]any) (any, string, string) {
	ref := ""
	for range 32 {
		m, ok := n.(map[string]any)
		if !ok {
			return n, base, ref
		}
		r, ok := m["$ref"].(string)
		if !ok {
			return n, base, ref
		}
		b, err := url.Parse(base)
		if err != nil {
			return nil, base, ref
		}
		u, err := b.Parse(r)
		if err != nil {
			return nil, base, ref
		}
		frag := u.Fragment
		u.Fragment = ""
		doc := docs[u.String()]
		if doc == nil && u.String() == "" {
			doc = docs[base]
		}
		base, ref = u.String(), u.String()+"#"+frag
		n = jsonPointer(doc, frag)
	}
	return n, base, ref
}

// jsonPointer follows an RFC 6901 pointer (a fragment) into doc.
func jsonPointer(doc any, frag string) any {
	if frag == "" || frag == "/" {
		return doc
	}
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			cur = v[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil
			}
			cur = v[i]
		default:
			return nil
		}
	}
	return cur
}

func (c *jsonChecker) check(r, w any, rbase, wbase, path string) {
	var rref, wref string
	r, rbase, rref = c.resolve(r, rbase, c.reader.docs)
	w, wbase, wref = c.resolve(w, wbase, c.writer.docs)
	if rref != "" || wref != "" {
		key := [2]string{rref, wref}
		if c.seen[key] {
			return
		}
		c.seen[key] = true
		defer delete(c.seen, key)
	}
	if wb, ok := w.(bool); ok && !wb {
		return // the writer writes nothing
	}
	if jsonAcceptsAll(r) {
		return
	}
	if rb, ok := r.(bool); ok && !rb {
		c.fail("SCHEMA_REMOVED", path)
		return
	}
	rm, _ := r.(map[string]any)
	wm, _ := w.(map[string]any)
	if wm == nil {
		wm = map[string]any{} // true: the writer accepts anything
	}
	if c.combined(rm, wm, rbase, wbase, path) {
		return
	}
	c.types(rm, wm, path)
	c.enum(rm, wm, path)
	c.bounds(rm, wm, path)
	if _, ok := rm["pattern"]; ok && !reflect.DeepEqual(rm["pattern"], wm["pattern"]) {
		if _, had := wm["pattern"]; had {
			c.fail("PATTERN_CHANGED", path+"/pattern")
		} else {
			c.fail("PATTERN_ADDED", path+"/pattern")
		}
	}
	if rm["uniqueItems"] == true && wm["uniqueItems"] != true {
		c.fail("UNIQUE_ITEMS_ADDED", path+"/uniqueItems")
	}
	if ri, ok := rm["items"]; ok && !jsonAcceptsAll(ri) {
		if _, isList := ri.([]any); !isList {
			c.check(ri, wm["items"], rbase, wbase, path+"/items")
		}
	}
	c.object(rm, wm, rbase, wbase, path)
}

// combined handles anyOf / oneOf / allOf; true when it decided.
func (c *jsonChecker) combined(rm, wm map[string]any, rbase, wbase, path string) bool {
	rBranches, rKind := jsonBranches(rm)
	wBranches, wKind := jsonBranches(wm)
	if rKind == "" && wKind == "" {
		return false
	}
	switch {
	case wKind == "allOf" && rKind == "":
		// An instance of the writer satisfies every branch: one readable
		// branch is enough.
		for _, wb := range wBranches {
			if c.readable(rm, wb, rbase, wbase) {
				return true
			}
		}
		c.fail("COMBINED_TYPE_SUBSCHEMAS_CHANGED", path)
	case rKind == "allOf":
		for i, rb := range rBranches {
			c.check(rb, wm, rbase, wbase, fmt.Sprintf("%s/allOf/%d", path, i))
		}
	case wKind == "anyOf" || wKind == "oneOf" || wKind == "":
		if wKind == "" {
			wBranches = []any{wm}
		}
		for i, wb := range wBranches {
			if rKind == "" {
				c.check(rm, wb, rbase, wbase, fmt.Sprintf("%s/%s/%d", path, wKind, i))
				continue
			}
			found := false
			for _, rb := range rBranches {
				if c.readable(rb, wb, rbase, wbase) {
					found = true
					break
				}
			}
			if !found {
				c.fail("COMBINED_TYPE_SUBSCHEMAS_CHANGED", fmt.Sprintf("%s/%s/%d", path, rKind, i))
			}
		}
	default:
		c.fail("COMBINED_TYPE_CHANGED", path)
	}
	return true
}

func jsonBranches(m map[string]any) ([]any, string) {
	for _, k := range []string{"oneOf", "anyOf", "allOf"} {
		if b, ok := m[k].([]any); ok {
			return b, k
		}
	}
	return nil, ""
}

// jsonTypes is a node's "type" as a set; nil means any type.
func jsonTypes(m map[string]any) []string {
	switch t := m["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func (c *jsonChecker) types(rm, wm map[string]any, path string) {
	rt := jsonTypes(rm)
	if rt == nil {
		return
	}
	wt := jsonTypes(wm)
	if wt == nil {
		c.fail("TYPE_NARROWED", path+"/type")
		return
	}
	for _, t := range wt {
		if slices.Contains(rt, t) || (t == "integer" && slices.Contains(rt, "number")) {
			continue
		}
		if len(rt) == 1 && len(wt) == 1 {
			c.fail("TYPE_CHANGED", path+"/type")
		} else {
			c.fail("TYPE_NARROWED", path+"/type")
		}
		return
	}
}

func (c *jsonChecker) enum(rm, wm map[string]any, path string) {
	re, ok := rm["enum"].([]any)
	if !ok {
		return
	}
	we, ok := wm["enum"].([]any)
	if !ok {
		c.fail("ENUM_ARRAY_NARROWED", path+"/enum")
		return
	}
	for _, v := range we {
		if !slices.ContainsFunc(re, func(x any) bool { return reflect.DeepEqual(x, v) }) {
			c.fail("ENUM_ARRAY_NARROWED", path+"/enum")
			return
		}
	}
}

// jsonNum reads a numeric keyword.
func jsonNum(m map[string]any, k string) (float64, bool) {
	switch v := m[k].(type) {
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case float64:
		return v, true
	}
	return 0, false
}

// bounds: an upper bound of the reader must not be below the writer's (or
// added), a lower bound not above it.
func (c *jsonChecker) bounds(rm, wm map[string]any, path string) {
	upper := map[string]string{"maxLength": "MAX_LENGTH", "maximum": "MAXIMUM", "exclusiveMaximum": "EXCLUSIVE_MAXIMUM",
		"maxItems": "MAX_ITEMS", "maxProperties": "MAX_PROPERTIES"}
	lower := map[string]string{"minLength": "MIN_LENGTH", "minimum": "MINIMUM", "exclusiveMinimum": "EXCLUSIVE_MINIMUM",
		"minItems": "MIN_ITEMS", "minProperties": "MIN_PROPERTIES"}
	for _, k := range sortedKeys(upper) {
		rv, ok := jsonNum(rm, k)
		if !ok {
			continue
		}
		if wv, ok := jsonNum(wm, k); !ok {
			c.fail(upper[k]+"_ADDED", path+"/"+k)
		} else if rv < wv {
			c.fail(upper[k]+"_DECREASED", path+"/"+k)
		}
	}
	for _, k := range sortedKeys(lower) {
		rv, ok := jsonNum(rm, k)
		if !ok {
			continue
		}
		if wv, ok := jsonNum(wm, k); !ok {
			c.fail(lower[k]+"_ADDED", path+"/"+k)
		} else if rv > wv {
			c.fail(lower[k]+"_INCREASED", path+"/"+k)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// additional is a node's additionalProperties: true when absent (an open
// content model), false (closed), or a schema (partially open).
func additional(m map[string]any) any {
	if a, ok := m["additionalProperties"]; ok {
		return a
	}
	return true
}

func (c *jsonChecker) object(rm, wm map[string]any, rbase, wbase, path string) {
	rp, _ := rm["properties"].(map[string]any)
	wp, _ := wm["properties"].(map[string]any)
	rAdd, wAdd := additional(rm), additional(wm)
	for _, name := range sortedKeys(rp) {
		p := path + "/properties/" + name
		if wv, ok := wp[name]; ok {
			c.check(rp[name], wv, rbase, wbase, p)
			continue
		}
		// The writer's instances carry this property only as one of its
		// additional properties.
		switch a := wAdd.(type) {
		case bool:
			if a && !jsonAcceptsAll(rp[name]) {
				c.fail("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", p)
			}
		default:
			if !c.readable(rp[name], a, rbase, wbase) {
				c.fail("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", p)
			}
		}
	}
	for _, name := range sortedKeys(wp) {
		if _, ok := rp[name]; ok {
			continue
		}
		p := path + "/properties/" + name
		switch a := rAdd.(type) {
		case bool:
			if !a {
				c.fail("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", p)
			}
		default:
			if !c.readable(a, wp[name], rbase, wbase) {
				c.fail("PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", p)
			}
		}
	}
	wReq := map[string]bool{}
	if req, ok := wm["required"].([]any); ok {
		for _, q := range req {
			if s, ok := q.(string); ok {
				wReq[s] = true
			}
		}
	}
	if req, ok := rm["required"].([]any); ok {
		for _, q := range req {
			s, _ := q.(string)
			if wReq[s] {
				continue
			}
			if pm, ok := rp[s].(map[string]any); ok {
				if _, hasDefault := pm["default"]; hasDefault {
					continue
				}
			}
			c.fail("REQUIRED_ATTRIBUTE_ADDED", path+"/required/"+s)
		}
	}
	// Properties neither names: the writer's additional ones must be
	// readable as the reader's additional ones.
	switch a := rAdd.(type) {
	case bool:
		if !a {
			if wb, ok := wAdd.(bool); !ok || wb {
				c.fail("ADDITIONAL_PROPERTIES_REMOVED", path+"/additionalProperties")
			}
		}
	default:
		if wb, ok := wAdd.(bool); ok {
			if wb && !jsonAcceptsAll(a) {
				c.fail("ADDITIONAL_PROPERTIES_NARROWED", path+"/additionalProperties")
			}
		} else {
			c.check(a, wAdd, rbase, wbase, path+"/additionalProperties")
		}
	}
}
