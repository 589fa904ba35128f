package registry

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Service is the registry's behaviour over a State and a Store: what the
// REST handlers call.
type Service struct {
	state *State
	store *Store
	// defaultCompat is schema.compatibility.level: the global level while
	// none is set through /config.
	defaultCompat string
	// writeMu serialises writes on this node, so an id or version is
	// allocated from a state that includes every earlier write.
	writeMu sync.Mutex
}

// NewService serves state, writing through store.
func NewService(state *State, store *Store, defaultCompat string) *Service {
	if c, ok := parseCompatibility(defaultCompat); ok {
		defaultCompat = c
	} else {
		defaultCompat = CompatBackward
	}
	return &Service{state: state, store: store, defaultCompat: defaultCompat}
}

// State is the service's in-memory state.
func (s *Service) State() *State { return s.state }

// RegisterRequest is the body of POST /subjects/{s}/versions and of the
// lookup and compatibility requests.
type RegisterRequest struct {
	// Subject is accepted as newer clients send it; the path names the
	// subject.
	Subject    string      `json:"subject,omitempty"`
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	// ID and Version are honoured in IMPORT mode only.
	ID      int `json:"id,omitempty"`
	Version int `json:"version,omitempty"`
}

// effectiveMode is the subject's mode, else the global one.
func (s *Service) effectiveMode(subject string) string {
	if m, ok := s.state.mode(subject); ok {
		return m
	}
	if m, ok := s.state.mode(""); ok {
		return m
	}
	return ModeReadWrite
}

// effectiveCompat is the subject's level, else the global one.
func (s *Service) effectiveCompat(subject string) string {
	if c, ok := s.state.config(subject); ok {
		return c
	}
	if c, ok := s.state.config(""); ok {
		return c
	}
	return s.defaultCompat
}

// resolve parses a request's schema with its references.
func (s *Service) resolve(req RegisterRequest, normalize bool) (string, parsedSchema, *Error) {
	typ, ok := normaliseType(req.SchemaType)
	if !ok {
		return "", nil, errInvalidSchema("type %q: not one of AVRO, JSON, PROTOBUF", req.SchemaType)
	}
	if strings.TrimSpace(req.Schema) == "" {
		return "", nil, errInvalidSchema("empty schema")
	}
	deps, err := s.dependencies(req.References, map[string]bool{})
	if err != nil {
		return "", nil, err
	}
	p, perr := parseSchema(typ, req.Schema, deps, normalize)
	if perr != nil {
		return "", nil, errInvalidSchema("%s", perr)
	}
	return typ, p, nil
}

// dependencies resolves references transitively, dependencies first.
func (s *Service) dependencies(refs []Reference, visiting map[string]bool) ([]dependency, *Error) {
	var out []dependency
	for _, r := range refs {
		key := r.Subject + "\x00" + strconv.Itoa(r.Version)
		if visiting[key] {
			return nil, errInvalidSchema("circular reference to %s version %d", r.Subject, r.Version)
		}
		v, err := s.version(r.Subject, strconv.Itoa(r.Version), false)
		if err != nil || r.Name == "" {
			return nil, errInvalidSchema("reference %q to subject %s version %d: not found", r.Name, r.Subject, r.Version)
		}
		visiting[key] = true
		sub, derr := s.dependencies(v.References, visiting)
		delete(visiting, key)
		if derr != nil {
			return nil, derr
		}
		out = append(out, sub...)
		out = append(out, dependency{Name: r.Name, Schema: v.Schema})
	}
	return out, nil
}

// parseVersion reads a version path element: latest, -1 or 1..2^31-1.
func parseVersion(v string) (int, *Error) {
	if v == "latest" || v == "-1" {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 {
		return 0, errInvalidVersion(v)
	}
	return int(n), nil
}

// version finds one version of a subject.
func (s *Service) version(subject, ver string, deleted bool) (SchemaVersion, *Error) {
	n, err := parseVersion(ver)
	if err != nil {
		return SchemaVersion{}, err
	}
	vs := s.state.versions(subject, true)
	if len(vs) == 0 || (!deleted && !slices.ContainsFunc(vs, func(v SchemaVersion) bool { return !v.Deleted })) {
		return SchemaVersion{}, errSubjectNotFound(subject)
	}
	if n == -1 {
		for i := len(vs) - 1; i >= 0; i-- {
			if deleted || !vs[i].Deleted {
				return vs[i], nil
			}
		}
		return SchemaVersion{}, errSubjectNotFound(subject)
	}
	for _, v := range vs {
		if v.Version == n && (deleted || !v.Deleted) {
			return v, nil
		}
	}
	return SchemaVersion{}, errVersionNotFound(subject, n)
}

// Register registers a schema under a subject and returns its id; the
// same schema registered again returns the id it has.
func (s *Service) Register(ctx context.Context, subject string, req RegisterRequest, normalize bool) (int, *Error) {
	mode := s.effectiveMode(subject)
	if mode == ModeReadOnly {
		return 0, errNotPermitted("Subject %s is in read-only mode", subject)
	}
	if (req.ID != 0 || req.Version != 0) && mode != ModeImport {
		return 0, errNotPermitted("Subject %s is not in import mode: a schema id or version cannot be given", subject)
	}
	if mode == ModeImport && req.ID <= 0 {
		return 0, errNotPermitted("Subject %s is in import mode: the schema id must be given", subject)
	}
	typ, parsed, perr := s.resolve(req, normalize)
	if perr != nil {
		return 0, perr
	}
	text := parsed.identity()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	// Read to the topic's end first: another registry node's write of
	// the same subject or a newer id is then in the state the version
	// and id below are allocated from.
	if err := s.store.sync(ctx); err != nil {
		return 0, errStore(err)
	}
	live := s.state.versions(subject, false)
	for _, v := range live {
		if v.Type == typ && slices.Equal(v.References, req.References) && s.sameSchema(v, parsed, normalize) {
			if mode == ModeImport && req.ID != v.ID {
				return 0, errNotPermitted("Overwrite new schema with id %d is not permitted: registered with id %d", req.ID, v.ID)
			}
			return v.ID, nil
		}
	}
	if mode != ModeImport {
		if msgs := s.check(typ, parsed, live, s.effectiveCompat(subject)); len(msgs) > 0 {
			return 0, errIncompatible(msgs)
		}
	}
	all := s.state.versions(subject, true)
	version := 1
	if len(all) > 0 {
		version = all[len(all)-1].Version + 1
	}
	id, reuse := s.state.idFor(typ, text, req.References)
	if !reuse {
		id = s.state.nextID()
	}
	if mode == ModeImport {
		if req.Version > 0 {
			version = req.Version
		}
		if t, txt, refs, ok := s.state.SchemaByID(req.ID); ok && (t != typ || txt != text || !slices.Equal(refs, req.References)) {
			return 0, &Error{http.StatusUnprocessableEntity, codeIDInUse,
				fmt.Sprintf("Overwrite new schema with id %d is not permitted.", req.ID)}
		}
		id = req.ID
		if slices.ContainsFunc(all, func(v SchemaVersion) bool { return v.Version == version }) {
			return 0, errNotPermitted("Subject %s already has a version %d", subject, version)
		}
	}
	key, value := encodeSchemaRecord(SchemaVersion{Subject: subject, Version: version, ID: id, Type: typ, Schema: text, References: req.References})
	if err := s.store.write(ctx, key, value); err != nil {
		return 0, errStore(err)
	}
	return id, nil
}

// sameSchema compares a registered version with a parsed candidate by
// their identities (normalised on both sides when asked).
func (s *Service) sameSchema(v SchemaVersion, candidate parsedSchema, normalize bool) bool {
	if !normalize {
		return v.Schema == candidate.identity()
	}
	deps, err := s.dependencies(v.References, map[string]bool{})
	if err != nil {
		return false
	}
	p, perr := parseSchema(v.Type, v.Schema, deps, true)
	return perr == nil && p.identity() == candidate.identity()
}

// check lists the incompatibilities of candidate with the versions the
// level compares it to (the latest, or all for transitive levels).
func (s *Service) check(typ string, candidate parsedSchema, live []SchemaVersion, level string) []string {
	if level == CompatNone || len(live) == 0 {
		return nil
	}
	against := live[len(live)-1:]
	if transitive(level) {
		against = live
	}
	var msgs []string
	for i := len(against) - 1; i >= 0; i-- {
		v := against[i]
		deps, err := s.dependencies(v.References, map[string]bool{})
		if err != nil {
			continue
		}
		prev, perr := parseSchema(v.Type, v.Schema, deps, false)
		if perr != nil {
			continue
		}
		if v.Type != typ {
			msgs = append(msgs, fmt.Sprintf("Incompatible because of different schema type (version %d)", v.Version))
			continue
		}
		for _, m := range incompatibilities(level, candidate, prev) {
			msgs = append(msgs, fmt.Sprintf("%s (version %d)", m, v.Version))
		}
	}
	return msgs
}

// Lookup finds the version of subject a schema is registered as.
func (s *Service) Lookup(subject string, req RegisterRequest, deleted, normalize bool) (SchemaVersion, *Error) {
	typ, parsed, err := s.resolve(req, normalize)
	if err != nil {
		if len(s.state.versions(subject, deleted)) == 0 {
			return SchemaVersion{}, errSubjectNotFound(subject)
		}
		return SchemaVersion{}, err
	}
	vs := s.state.versions(subject, deleted)
	if len(vs) == 0 {
		return SchemaVersion{}, errSubjectNotFound(subject)
	}
	for i := len(vs) - 1; i >= 0; i-- {
		v := vs[i]
		if v.Type == typ && slices.Equal(v.References, req.References) && s.sameSchema(v, parsed, normalize) {
			return v, nil
		}
	}
	return SchemaVersion{}, errSchemaNotFound()
}

// TestCompatibility checks a schema against one version (or, with ver
// empty, every version the subject's level compares to).
func (s *Service) TestCompatibility(subject, ver string, req RegisterRequest, normalize bool) ([]string, *Error) {
	typ, parsed, err := s.resolve(req, normalize)
	if err != nil {
		return nil, err
	}
	level := s.effectiveCompat(subject)
	if ver == "" {
		return s.check(typ, parsed, s.state.versions(subject, false), level), nil
	}
	v, verr := s.version(subject, ver, false)
	if verr != nil {
		if verr.Code == codeSubjectNotFound {
			// Nothing to be incompatible with, as Confluent answers.
			return nil, nil
		}
		return nil, verr
	}
	if level == CompatNone {
		return nil, nil
	}
	if transitive(level) {
		// One named version: the level's direction, not its transitivity.
		level = strings.TrimSuffix(level, "_TRANSITIVE")
	}
	return s.check(typ, parsed, []SchemaVersion{v}, level), nil
}

// DeleteVersion soft-deletes (or, already soft-deleted, permanently
// deletes) one version and returns its number.
func (s *Service) DeleteVersion(ctx context.Context, subject, ver string, permanent bool) (int, *Error) {
	if s.effectiveMode(subject) == ModeReadOnly {
		return 0, errNotPermitted("Subject %s is in read-only mode", subject)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	v, err := s.version(subject, ver, permanent)
	if err != nil {
		return 0, err
	}
	if refs := s.state.referencedBy(subject, v.Version); len(refs) > 0 {
		return 0, &Error{http.StatusUnprocessableEntity, codeReferenceExists,
			fmt.Sprintf("One or more references exist to the schema {subject=%s,version=%d}: ids %v", subject, v.Version, refs)}
	}
	if permanent {
		if !v.Deleted {
			return 0, &Error{http.StatusNotFound, codeVersionNotSoftDeleted,
				fmt.Sprintf("Subject '%s' Version %d was not deleted first before being permanently deleted", subject, v.Version)}
		}
		if werr := s.store.write(ctx, schemaTombstoneKey(subject, v.Version), nil); werr != nil {
			return 0, errStore(werr)
		}
		return v.Version, nil
	}
	if v.Deleted {
		return 0, &Error{http.StatusNotFound, codeVersionSoftDeleted,
			fmt.Sprintf("Subject '%s' Version %d was soft deleted. Set permanent=true to delete permanently", subject, v.Version)}
	}
	v.Deleted = true
	key, value := encodeSchemaRecord(v)
	if werr := s.store.write(ctx, key, value); werr != nil {
		return 0, errStore(werr)
	}
	return v.Version, nil
}

// DeleteSubject soft-deletes every version of a subject (or, once soft
// deleted, removes them permanently with its config and mode) and returns
// the versions deleted.
func (s *Service) DeleteSubject(ctx context.Context, subject string, permanent bool) ([]int, *Error) {
	if s.effectiveMode(subject) == ModeReadOnly {
		return nil, errNotPermitted("Subject %s is in read-only mode", subject)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	all := s.state.versions(subject, true)
	if len(all) == 0 {
		return nil, errSubjectNotFound(subject)
	}
	live := slices.DeleteFunc(slices.Clone(all), func(v SchemaVersion) bool { return v.Deleted })
	for _, v := range all {
		if refs := s.state.referencedBy(subject, v.Version); len(refs) > 0 {
			return nil, &Error{http.StatusUnprocessableEntity, codeReferenceExists,
				fmt.Sprintf("One or more references exist to the schema {subject=%s,version=%d}: ids %v", subject, v.Version, refs)}
		}
	}
	var out []int
	if permanent {
		if len(live) > 0 {
			return nil, &Error{http.StatusNotFound, codeSubjectNotSoftDeleted,
				fmt.Sprintf("Subject '%s' was not deleted first before being permanently deleted", subject)}
		}
		for _, v := range all {
			if err := s.store.write(ctx, schemaTombstoneKey(subject, v.Version), nil); err != nil {
				return nil, errStore(err)
			}
			out = append(out, v.Version)
		}
		// The subject's soft-delete watermark, config and mode go too, so
		// a subject registered again starts afresh.
		for _, kt := range []string{keyDeleteSubject, keyConfig, keyMode} {
			if err := s.store.write(ctx, subjectRecordKey(kt, &subject), nil); err != nil {
				return nil, errStore(err)
			}
		}
		return out, nil
	}
	if len(live) == 0 {
		return nil, &Error{http.StatusNotFound, codeSubjectSoftDeleted,
			fmt.Sprintf("Subject '%s' was soft deleted. Set permanent=true to delete permanently", subject)}
	}
	value := mustJSON(deleteSubjectValue{Subject: subject, Version: all[len(all)-1].Version})
	if err := s.store.write(ctx, subjectRecordKey(keyDeleteSubject, &subject), value); err != nil {
		return nil, errStore(err)
	}
	for _, v := range live {
		out = append(out, v.Version)
	}
	return out, nil
}

// subjectPtr is nil for the global scope.
func subjectPtr(subject string) *string {
	if subject == "" {
		return nil
	}
	return &subject
}

// SetConfig sets the compatibility level of a subject ("" global).
func (s *Service) SetConfig(ctx context.Context, subject, level string) (string, *Error) {
	l, ok := parseCompatibility(level)
	if !ok {
		return "", errInvalidCompatibility(level)
	}
	if err := s.store.write(ctx, subjectRecordKey(keyConfig, subjectPtr(subject)), mustJSON(configValue{CompatibilityLevel: l})); err != nil {
		return "", errStore(err)
	}
	return l, nil
}

// DeleteConfig removes a subject's level (the global one: back to the
// default) and returns the level it had.
func (s *Service) DeleteConfig(ctx context.Context, subject string) (string, *Error) {
	old, ok := s.state.config(subject)
	if !ok {
		if subject != "" {
			return "", errSubjectNotFound(subject)
		}
		old = s.defaultCompat
	}
	if err := s.store.write(ctx, subjectRecordKey(keyConfig, subjectPtr(subject)), nil); err != nil {
		return "", errStore(err)
	}
	return old, nil
}

// SetMode sets a subject's mode ("" global). IMPORT needs an empty
// registry (or subject) unless force.
func (s *Service) SetMode(ctx context.Context, subject, mode string, force bool) (string, *Error) {
	m, ok := parseMode(mode)
	if !ok {
		return "", errInvalidMode(mode)
	}
	if m == ModeImport && !force {
		nonEmpty := !s.state.empty()
		if subject != "" {
			nonEmpty = len(s.state.versions(subject, true)) > 0
		}
		if nonEmpty {
			return "", errNotPermitted("Cannot import since found existing subjects")
		}
	}
	if err := s.store.write(ctx, subjectRecordKey(keyMode, subjectPtr(subject)), mustJSON(modeValue{Mode: m})); err != nil {
		return "", errStore(err)
	}
	return m, nil
}

// DeleteMode removes a subject's mode and returns the one it had.
func (s *Service) DeleteMode(ctx context.Context, subject string) (string, *Error) {
	old, ok := s.state.mode(subject)
	if !ok {
		return "", errSubjectNotFound(subject)
	}
	if err := s.store.write(ctx, subjectRecordKey(keyMode, subjectPtr(subject)), nil); err != nil {
		return "", errStore(err)
	}
	return old, nil
}
