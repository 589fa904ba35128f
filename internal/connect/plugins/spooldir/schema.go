package spooldir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vltava/vltava/connect"
)

// parseSchemaJSON reads a schema in the JSON form the spool-dir connector
// takes for key.schema and value.schema:
//
//	{"name":"com.example.Order","type":"STRUCT","isOptional":false,
//	 "fieldSchemas":{"id":{"type":"INT64","isOptional":false},…}}
//
// Field order is the order of fieldSchemas. "valueSchema" and "keySchema"
// describe array and map elements; "parameters", "doc", "version" carry over.
func parseSchemaJSON(s string) (*connect.Schema, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	sch, err := decodeSchema(d)
	if err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("trailing data after the schema")
	}
	return sch, nil
}

// decodeSchema reads one schema object, keeping the order of fieldSchemas.
func decodeSchema(d *json.Decoder) (*connect.Schema, error) {
	if err := expectDelim(d, '{'); err != nil {
		return nil, err
	}
	s := &connect.Schema{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		switch key {
		case "type":
			var t string
			if err := d.Decode(&t); err != nil {
				return nil, err
			}
			switch strings.ToUpper(t) {
			case "INT8", "INT16", "INT32", "INT64", "FLOAT32", "FLOAT64", "BOOLEAN", "STRING", "BYTES", "ARRAY", "MAP":
				s.Type = connect.Type(strings.ToLower(t))
			case "STRUCT":
				s.Type = connect.StructT
			default:
				return nil, fmt.Errorf("unknown schema type %q", t)
			}
		case "isOptional", "optional":
			if err := d.Decode(&s.Optional); err != nil {
				return nil, err
			}
		case "name":
			if err := d.Decode(&s.Name); err != nil {
				return nil, err
			}
		case "doc":
			if err := d.Decode(&s.Doc); err != nil {
				return nil, err
			}
		case "version":
			if err := d.Decode(&s.Version); err != nil {
				return nil, err
			}
		case "parameters":
			if err := d.Decode(&s.Parameters); err != nil {
				return nil, err
			}
		case "fieldSchemas":
			if err := expectDelim(d, '{'); err != nil {
				return nil, err
			}
			for d.More() {
				ft, err := d.Token()
				if err != nil {
					return nil, err
				}
				fs, err := decodeSchema(d)
				if err != nil {
					return nil, fmt.Errorf("field %v: %w", ft, err)
				}
				s.Fields = append(s.Fields, connect.Field{Name: fmt.Sprint(ft), Index: len(s.Fields), Schema: fs})
			}
			if _, err := d.Token(); err != nil {
				return nil, err
			}
		case "valueSchema", "keySchema":
			sub, err := decodeSchema(d)
			if err != nil {
				return nil, err
			}
			if key == "valueSchema" {
				s.Value = sub
			} else {
				s.Key = sub
			}
		default:
			var skip json.RawMessage
			if err := d.Decode(&skip); err != nil {
				return nil, err
			}
			if !bytes.Equal(bytes.TrimSpace(skip), []byte("null")) && key == "defaultValue" {
				return nil, fmt.Errorf("defaultValue is not supported in schemas given to this connector")
			}
		}
	}
	if _, err := d.Token(); err != nil {
		return nil, err
	}
	if s.Type == "" {
		return nil, fmt.Errorf("schema without a type")
	}
	return s, nil
}

func expectDelim(d *json.Decoder, want json.Delim) error {
	tok, err := d.Token()
	if err != nil {
		return err
	}
	if dl, ok := tok.(json.Delim); !ok || dl != want {
		return fmt.Errorf("expected %q, found %v", want, tok)
	}
	return nil
}
