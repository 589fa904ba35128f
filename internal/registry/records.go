package registry

import (
	"encoding/json"
	"fmt"
)

// The _schemas topic's record format, as Confluent Schema Registry writes
// it: JSON keys naming what a record is about, JSON values (null: a
// tombstone). Key fields are in the registry's order, so keys of the same
// thing are byte-equal and compaction keeps the last one.
const (
	keySchema        = "SCHEMA"
	keyConfig        = "CONFIG"
	keyMode          = "MODE"
	keyDeleteSubject = "DELETE_SUBJECT"
	keyClearSubject  = "CLEAR_SUBJECT"
	keyNoop          = "NOOP"
)

// schemaKey is a SCHEMA record's key.
type schemaKey struct {
	KeyType string `json:"keytype"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
	Magic   int    `json:"magic"`
}

// subjectKey is the key of CONFIG, MODE, DELETE_SUBJECT and CLEAR_SUBJECT
// records; a nil subject is the global config or mode.
type subjectKey struct {
	KeyType string  `json:"keytype"`
	Subject *string `json:"subject"`
	Magic   int     `json:"magic"`
}

// noopKey is a NOOP record's key: written to learn where the end is.
type noopKey struct {
	KeyType string `json:"keytype"`
	Magic   int    `json:"magic"`
}

// schemaValue is a SCHEMA record's value.
type schemaValue struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int         `json:"id"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	Schema     string      `json:"schema"`
	Deleted    bool        `json:"deleted"`
}

type configValue struct {
	CompatibilityLevel string `json:"compatibilityLevel"`
}

type modeValue struct {
	Mode string `json:"mode"`
}

type deleteSubjectValue struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// record is one decoded _schemas record.
type record struct {
	keyType string
	subject *string // CONFIG, MODE: nil is global
	version int
	schema  *schemaValue // SCHEMA; nil: tombstone
	config  *configValue
	mode    *modeValue
	delete  *deleteSubjectValue
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("registry: encoding %T: %v", v, err)) // plain structs always encode
	}
	return b
}

func encodeSchemaRecord(v SchemaVersion) (key, value []byte) {
	key = mustJSON(schemaKey{KeyType: keySchema, Subject: v.Subject, Version: v.Version, Magic: 1})
	sv := schemaValue{Subject: v.Subject, Version: v.Version, ID: v.ID, References: v.References, Schema: v.Schema, Deleted: v.Deleted}
	if v.Type != TypeAvro {
		sv.SchemaType = v.Type
	}
	return key, mustJSON(sv)
}

func schemaTombstoneKey(subject string, version int) []byte {
	return mustJSON(schemaKey{KeyType: keySchema, Subject: subject, Version: version, Magic: 1})
}

func subjectRecordKey(keyType string, subject *string) []byte {
	return mustJSON(subjectKey{KeyType: keyType, Subject: subject, Magic: 0})
}

func noopRecordKey() []byte { return mustJSON(noopKey{KeyType: keyNoop, Magic: 0}) }

// decodeRecord parses a _schemas record. Records of kinds this registry
// does not know are returned with their key type only and skipped.
func decodeRecord(key, value []byte) (record, error) {
	var k struct {
		KeyType string  `json:"keytype"`
		Subject *string `json:"subject"`
		Version int     `json:"version"`
	}
	if err := json.Unmarshal(key, &k); err != nil {
		return record{}, fmt.Errorf("key %q: %w", key, err)
	}
	r := record{keyType: k.KeyType, subject: k.Subject, version: k.Version}
	if value == nil {
		return r, nil
	}
	var err error
	switch k.KeyType {
	case keySchema:
		r.schema = &schemaValue{}
		err = json.Unmarshal(value, r.schema)
	case keyConfig:
		r.config = &configValue{}
		err = json.Unmarshal(value, r.config)
	case keyMode:
		r.mode = &modeValue{}
		err = json.Unmarshal(value, r.mode)
	case keyDeleteSubject:
		r.delete = &deleteSubjectValue{}
		err = json.Unmarshal(value, r.delete)
	}
	if err != nil {
		return record{}, fmt.Errorf("%s value %q: %w", k.KeyType, value, err)
	}
	return r, nil
}
