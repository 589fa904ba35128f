package registry

import "fmt"

// parsedSchema is a schema its format's library accepted.
type parsedSchema interface {
	// identity is the text two registrations are compared by: the
	// registered text with insignificant whitespace removed, or with
	// normalize its normalised form.
	identity() string
	// canRead lists why this schema, as the reader, cannot read data
	// written with writer (same format); nil when it can.
	canRead(writer parsedSchema) []string
}

// dependency is a referenced schema, resolved: the reference's name and
// the text of the version it points at.
type dependency struct {
	Name   string
	Schema string
}

// parseSchema parses text of schema type typ with its dependencies
// (transitively resolved, dependencies before dependants). normalize asks
// for the normalised identity (the API's normalize=true).
func parseSchema(typ, text string, deps []dependency, normalize bool) (parsedSchema, error) {
	switch typ {
	case TypeAvro:
		return parseAvro(text, deps, normalize)
	case TypeJSON:
		return parseJSONSchema(text, deps, normalize)
	case TypeProtobuf:
		return parseProtobuf(text, deps, normalize)
	}
	return nil, fmt.Errorf("unknown schema type %s", typ)
}

// incompatibilities lists why candidate is not compatible with previous
// under the direction of level (transitivity is the caller's): BACKWARD
// has the candidate read what previous wrote, FORWARD the reverse, FULL
// both.
func incompatibilities(level string, candidate, previous parsedSchema) []string {
	var out []string
	switch level {
	case CompatBackward, CompatBackwardTransitive:
		out = candidate.canRead(previous)
	case CompatForward, CompatForwardTransitive:
		out = previous.canRead(candidate)
	case CompatFull, CompatFullTransitive:
		out = append(candidate.canRead(previous), previous.canRead(candidate)...)
	}
	return out
}

// transitive reports whether a level checks every earlier version rather
// than only the latest.
func transitive(level string) bool {
	return level == CompatBackwardTransitive || level == CompatForwardTransitive || level == CompatFullTransitive
}
