package registry

import "strings"

// Schema types, as the API names them ("schemaType"; absent means AVRO).
const (
	TypeAvro     = "AVRO"
	TypeJSON     = "JSON"
	TypeProtobuf = "PROTOBUF"
)

// Reference is a named dependency of a schema on a version of another
// subject: an Avro named type, a JSON Schema $ref target, a Protobuf import.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// SchemaVersion is one registered version of a subject.
type SchemaVersion struct {
	Subject    string
	Version    int
	ID         int
	Type       string // TypeAvro, TypeJSON or TypeProtobuf
	Schema     string // the text as registered (canonical unless registered in IMPORT mode)
	References []Reference
	Deleted    bool // soft-deleted
}

// Compatibility levels.
const (
	CompatBackward           = "BACKWARD"
	CompatBackwardTransitive = "BACKWARD_TRANSITIVE"
	CompatForward            = "FORWARD"
	CompatForwardTransitive  = "FORWARD_TRANSITIVE"
	CompatFull               = "FULL"
	CompatFullTransitive     = "FULL_TRANSITIVE"
	CompatNone               = "NONE"
)

// parseCompatibility normalises a level name; ok is false for an unknown one.
func parseCompatibility(s string) (string, bool) {
	u := strings.ToUpper(strings.TrimSpace(s))
	switch u {
	case CompatBackward, CompatBackwardTransitive, CompatForward, CompatForwardTransitive,
		CompatFull, CompatFullTransitive, CompatNone:
		return u, true
	}
	return "", false
}

// Modes.
const (
	ModeReadWrite = "READWRITE"
	ModeReadOnly  = "READONLY"
	ModeImport    = "IMPORT"
)

func parseMode(s string) (string, bool) {
	u := strings.ToUpper(strings.TrimSpace(s))
	switch u {
	case ModeReadWrite, ModeReadOnly, ModeImport:
		return u, true
	}
	return "", false
}

// normaliseType maps the API's schemaType (empty: AVRO) to a known type.
func normaliseType(t string) (string, bool) {
	switch u := strings.ToUpper(t); u {
	case "", TypeAvro:
		return TypeAvro, true
	case TypeJSON, TypeProtobuf:
		return u, true
	}
	return "", false
}
