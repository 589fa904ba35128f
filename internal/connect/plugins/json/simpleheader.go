package json

import (
	"encoding/base64"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vltava/vltava/connect"
)

// SimpleHeaderClass is the simple header converter's class name, the
// worker's default header.converter in Kafka.
const SimpleHeaderClass = "org.apache.kafka.connect.storage.SimpleHeaderConverter"

func init() {
	connect.RegisterHeaderConverter(SimpleHeaderClass, version, func() connect.HeaderConverter { return SimpleHeaderConverter{} })
}

// SimpleHeaderConverter writes header values as their string form and reads
// header strings back into typed values the way Kafka's Values.parseString
// does: true/false as BOOLEAN, integers as the smallest of INT8…INT64 that
// holds them, other numbers as FLOAT32 or FLOAT64, ISO-8601 dates, times
// and timestamps as the logical types, [..] and {..} as arrays and maps,
// anything else (and the empty string) as STRING.
type SimpleHeaderConverter struct{}

// Configure implements connect.HeaderConverter; the converter has no
// settings.
func (SimpleHeaderConverter) Configure(map[string]string) error { return nil }

// FromConnectHeader implements connect.HeaderConverter.
func (SimpleHeaderConverter) FromConnectHeader(topic, key string, schema *connect.Schema, value any) ([]byte, error) {
	if value == nil {
		return nil, nil
	}
	var b strings.Builder
	appendString(&b, schema, value, false)
	return []byte(b.String()), nil
}

// ToConnectHeader implements connect.HeaderConverter.
func (SimpleHeaderConverter) ToConnectHeader(topic, key string, data []byte) (*connect.Schema, any, error) {
	if data == nil {
		return nil, nil, nil
	}
	s, v := ParseString(string(data))
	return s, v, nil
}

// The formats of Kafka's Values for the time logical types.
const (
	isoDate      = "2006-01-02"
	isoTime      = "15:04:05.000Z"
	isoTimestamp = "2006-01-02T15:04:05.000Z"
)

// appendString is Values.convertToString: strings embedded in arrays and
// maps are quoted and escaped.
func appendString(b *strings.Builder, s *connect.Schema, v any, embedded bool) {
	if v == nil {
		b.WriteString("null")
		return
	}
	if s != nil {
		switch s.Name {
		case connect.DateName:
			if t, ok := v.(time.Time); ok {
				b.WriteString(t.UTC().Format(isoDate))
				return
			}
		case connect.TimeName:
			if t, ok := v.(time.Time); ok {
				b.WriteString(t.UTC().Format(isoTime))
				return
			}
		case connect.TimestampName:
			if t, ok := v.(time.Time); ok {
				b.WriteString(t.UTC().Format(isoTimestamp))
				return
			}
		}
	}
	switch x := v.(type) {
	case string:
		if embedded {
			b.WriteByte('"')
			b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(x))
			b.WriteByte('"')
		} else {
			b.WriteString(x)
		}
	case []byte:
		b.WriteString(base64.StdEncoding.EncodeToString(x))
	case time.Time:
		b.WriteString(x.UTC().Format(isoTimestamp))
	case float32:
		b.WriteString(strconv.FormatFloat(float64(x), 'g', -1, 32))
	case float64:
		b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	case []any:
		var es *connect.Schema
		if s != nil {
			es = s.Value
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			appendString(b, es, e, true)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			appendString(b, nil, k, true)
			b.WriteByte(':')
			appendString(b, nil, x[k], true)
		}
		b.WriteByte('}')
	case map[any]any:
		var ks, vs *connect.Schema
		if s != nil {
			ks, vs = s.Key, s.Value
		}
		keys := make([]any, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			appendString(b, ks, k, true)
			b.WriteByte(':')
			appendString(b, vs, x[k], true)
		}
		b.WriteByte('}')
	case *connect.Struct:
		b.WriteByte('{')
		for i, f := range x.Schema().Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			appendString(b, nil, f.Name, true)
			b.WriteByte(':')
			fv, _ := x.Get(f.Name)
			appendString(b, f.Schema, fv, true)
		}
		b.WriteByte('}')
	default:
		fmt.Fprint(b, x)
	}
}

// ParseString is Kafka's Values.parseString: it infers a schema and value
// from a header string.
func ParseString(s string) (*connect.Schema, any) {
	if s == "" {
		return &connect.Schema{Type: connect.String}, s
	}
	p := &valueParser{src: s}
	sch, v, ok := p.parse(false)
	p.skipSpace()
	if !ok || p.pos != len(s) {
		return &connect.Schema{Type: connect.String}, s
	}
	return sch, v
}

type valueParser struct {
	src string
	pos int
}

func (p *valueParser) skipSpace() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

// parse reads one value; embedded values end at , ] } or :.
func (p *valueParser) parse(embedded bool) (*connect.Schema, any, bool) {
	p.skipSpace()
	if p.pos >= len(p.src) {
		return nil, nil, false
	}
	switch p.src[p.pos] {
	case '[':
		return p.parseArray()
	case '{':
		return p.parseMap()
	case '"':
		if !embedded {
			break
		}
		str, ok := p.parseQuoted()
		return &connect.Schema{Type: connect.String}, str, ok
	}
	start := p.pos
	if embedded {
		for p.pos < len(p.src) && !strings.ContainsRune(",]}:", rune(p.src[p.pos])) {
			p.pos++
		}
	} else {
		p.pos = len(p.src)
	}
	tok := strings.TrimSpace(p.src[start:p.pos])
	if tok == "null" && embedded {
		return nil, nil, true
	}
	sch, v := scalar(tok)
	return sch, v, true
}

func (p *valueParser) parseQuoted() (string, bool) {
	var b strings.Builder
	p.pos++ // opening quote
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		p.pos++
		switch c {
		case '\\':
			if p.pos < len(p.src) {
				b.WriteByte(p.src[p.pos])
				p.pos++
			}
		case '"':
			return b.String(), true
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}

func (p *valueParser) parseArray() (*connect.Schema, any, bool) {
	p.pos++
	var out []any
	var elem *connect.Schema
	same := true
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		return &connect.Schema{Type: connect.Array, Value: &connect.Schema{Type: connect.String, Optional: true}}, []any{}, true
	}
	for {
		s, v, ok := p.parse(true)
		if !ok {
			return nil, nil, false
		}
		out = append(out, v)
		elem, same = common(elem, s, same, len(out) == 1)
		p.skipSpace()
		if p.pos >= len(p.src) {
			return nil, nil, false
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
			continue
		case ']':
			p.pos++
			if !same || elem == nil {
				return nil, out, true // schemaless: mixed element types
			}
			e := *elem
			e.Optional = true
			return &connect.Schema{Type: connect.Array, Value: &e}, out, true
		}
		return nil, nil, false
	}
}

func (p *valueParser) parseMap() (*connect.Schema, any, bool) {
	p.pos++
	out := map[any]any{}
	var ks, vs *connect.Schema
	ksame, vsame := true, true
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		opt := &connect.Schema{Type: connect.String, Optional: true}
		return &connect.Schema{Type: connect.Map, Key: opt, Value: opt}, out, true
	}
	first := true
	for {
		k, kv, ok := p.parse(true)
		if !ok || kv == nil {
			return nil, nil, false
		}
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return nil, nil, false
		}
		p.pos++
		v, vv, ok := p.parse(true)
		if !ok {
			return nil, nil, false
		}
		out[kv] = vv
		ks, ksame = common(ks, k, ksame, first)
		vs, vsame = common(vs, v, vsame, first)
		first = false
		p.skipSpace()
		if p.pos >= len(p.src) {
			return nil, nil, false
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
			continue
		case '}':
			p.pos++
			if !ksame || !vsame || ks == nil || vs == nil {
				return nil, out, true
			}
			k2, v2 := *ks, *vs
			k2.Optional, v2.Optional = true, true
			return &connect.Schema{Type: connect.Map, Key: &k2, Value: &v2}, out, true
		}
		return nil, nil, false
	}
}

func common(acc, s *connect.Schema, same, first bool) (*connect.Schema, bool) {
	if first {
		return s, s != nil
	}
	if !same || s == nil || acc == nil || acc.Type != s.Type || acc.Name != s.Name {
		return acc, false
	}
	return acc, true
}

// scalar infers the schema of an unquoted token, as parseString does.
func scalar(tok string) (*connect.Schema, any) {
	switch tok {
	case "true":
		return &connect.Schema{Type: connect.Boolean}, true
	case "false":
		return &connect.Schema{Type: connect.Boolean}, false
	}
	if t, err := time.Parse(isoTimestamp, tok); err == nil {
		return &connect.Schema{Type: connect.Int64, Name: connect.TimestampName, Version: 1}, t
	}
	if t, err := time.Parse(isoDate, tok); err == nil {
		return &connect.Schema{Type: connect.Int32, Name: connect.DateName, Version: 1}, t
	}
	if t, err := time.Parse(isoTime, tok); err == nil {
		return &connect.Schema{Type: connect.Int32, Name: connect.TimeName, Version: 1}, t
	}
	if looksNumeric(tok) {
		if r, ok := new(big.Rat).SetString(tok); ok {
			if r.IsInt() {
				n := r.Num()
				if n.IsInt64() {
					i := n.Int64()
					switch {
					case i >= math.MinInt8 && i <= math.MaxInt8:
						return &connect.Schema{Type: connect.Int8}, int8(i)
					case i >= math.MinInt16 && i <= math.MaxInt16:
						return &connect.Schema{Type: connect.Int16}, int16(i)
					case i >= math.MinInt32 && i <= math.MaxInt32:
						return &connect.Schema{Type: connect.Int32}, int32(i)
					}
					return &connect.Schema{Type: connect.Int64}, i
				}
			}
			scale := int32(0)
			if i := strings.IndexByte(tok, '.'); i >= 0 && !strings.ContainsAny(tok, "eE") {
				scale = int32(len(tok) - i - 1)
			}
			if !r.IsInt() || scale > 0 {
				if f, err := strconv.ParseFloat(tok, 32); err == nil && !math.IsInf(f, 0) {
					return &connect.Schema{Type: connect.Float32}, float32(f)
				}
				if f, err := strconv.ParseFloat(tok, 64); err == nil && !math.IsInf(f, 0) {
					return &connect.Schema{Type: connect.Float64}, f
				}
			}
			unscaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
			return &connect.Schema{Type: connect.Bytes, Name: connect.DecimalName, Version: 1,
					Parameters: map[string]string{connect.DecimalScaleParam: strconv.Itoa(int(scale))}},
				connect.Decimal{Unscaled: new(big.Int).Quo(unscaled.Num(), unscaled.Denom()), Scale: scale}
		}
	}
	return &connect.Schema{Type: connect.String}, tok
}

func looksNumeric(tok string) bool {
	if tok == "" {
		return false
	}
	c := tok[0]
	return (c >= '0' && c <= '9') || ((c == '-' || c == '+' || c == '.') && len(tok) > 1)
}
