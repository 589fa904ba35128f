package registry

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"sync"
)

// State is the registry's content as the _schemas topic built it. Only
// the Store's reader goroutine calls apply; everything else reads.
type State struct {
	mu       sync.RWMutex
	subjects map[string][]*SchemaVersion // versions ascending
	ids      map[int]*idEntry
	byText   map[string]int // schemaKeyOf → id, for id reuse across subjects
	maxID    int
	configs  map[string]string // subject → level; "" is the global one
	modes    map[string]string // subject → mode; "" is the global one
}

// idEntry is a schema id and where it is registered.
type idEntry struct {
	Type       string
	Schema     string
	References []Reference
	uses       []*SchemaVersion
}

// NewState returns an empty state.
func NewState() *State {
	return &State{subjects: map[string][]*SchemaVersion{}, ids: map[int]*idEntry{}, byText: map[string]int{},
		configs: map[string]string{}, modes: map[string]string{}}
}

// schemaKeyOf identifies a schema text with its type and references: the
// same schema under two subjects has one id.
func schemaKeyOf(typ, text string, refs []Reference) string {
	r, _ := json.Marshal(refs)
	return typ + "\x00" + text + "\x00" + string(r)
}

// apply folds one record of the topic into the state.
func (s *State) apply(r record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := ""
	if r.subject != nil {
		sub = *r.subject
	}
	switch r.keyType {
	case keySchema:
		if r.schema == nil {
			s.removeVersion(sub, r.version)
			return
		}
		v := r.schema
		typ, ok := normaliseType(v.SchemaType)
		if !ok {
			return
		}
		s.putVersion(&SchemaVersion{Subject: v.Subject, Version: v.Version, ID: v.ID, Type: typ, Schema: v.Schema,
			References: v.References, Deleted: v.Deleted})
	case keyConfig:
		if r.config == nil {
			delete(s.configs, sub)
		} else {
			s.configs[sub] = r.config.CompatibilityLevel
		}
	case keyMode:
		if r.mode == nil {
			delete(s.modes, sub)
		} else {
			s.modes[sub] = r.mode.Mode
		}
	case keyDeleteSubject:
		if r.delete == nil {
			return
		}
		for _, v := range s.subjects[r.delete.Subject] {
			if v.Version <= r.delete.Version {
				v.Deleted = true
			}
		}
	case keyClearSubject:
		// Permanently deleted versions come as SCHEMA tombstones; the
		// clear marker itself changes nothing more.
	}
}

func (s *State) putVersion(v *SchemaVersion) {
	s.removeVersion(v.Subject, v.Version)
	vs := s.subjects[v.Subject]
	i := sort.Search(len(vs), func(i int) bool { return vs[i].Version >= v.Version })
	s.subjects[v.Subject] = slices.Insert(vs, i, v)
	e := s.ids[v.ID]
	if e == nil {
		e = &idEntry{Type: v.Type, Schema: v.Schema, References: v.References}
		s.ids[v.ID] = e
		s.byText[schemaKeyOf(v.Type, v.Schema, v.References)] = v.ID
	}
	e.uses = append(e.uses, v)
	s.maxID = max(s.maxID, v.ID)
}

func (s *State) removeVersion(subject string, version int) {
	vs := s.subjects[subject]
	i := slices.IndexFunc(vs, func(v *SchemaVersion) bool { return v.Version == version })
	if i < 0 {
		return
	}
	old := vs[i]
	vs = slices.Delete(vs, i, i+1)
	if len(vs) == 0 {
		delete(s.subjects, subject)
	} else {
		s.subjects[subject] = vs
	}
	if e := s.ids[old.ID]; e != nil {
		e.uses = slices.DeleteFunc(e.uses, func(v *SchemaVersion) bool { return v == old })
		if len(e.uses) == 0 {
			delete(s.ids, old.ID)
			delete(s.byText, schemaKeyOf(e.Type, e.Schema, e.References))
		}
	}
}

// SchemaByID returns the schema of an id: type, text, references. It is
// the lookup deserializers make for every new id, served from memory.
func (s *State) SchemaByID(id int) (typ, schema string, refs []Reference, ok bool) {
	s.mu.RLock()
	e := s.ids[id]
	s.mu.RUnlock()
	if e == nil {
		return "", "", nil, false
	}
	return e.Type, e.Schema, e.References, true
}

// IDRegisteredUnder reports whether id is a live (not soft-deleted)
// version of subject.
func (s *State) IDRegisteredUnder(id int, subject string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.ids[id]
	if e == nil {
		return false
	}
	for _, v := range e.uses {
		if v.Subject == subject && !v.Deleted {
			return true
		}
	}
	return false
}

// idUses lists the subject versions registered with an id.
func (s *State) idUses(id int, deleted bool) []SchemaVersion {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.ids[id]
	if e == nil {
		return nil
	}
	var out []SchemaVersion
	for _, v := range e.uses {
		if deleted || !v.Deleted {
			out = append(out, *v)
		}
	}
	slices.SortFunc(out, func(a, b SchemaVersion) int {
		if c := strings.Compare(a.Subject, b.Subject); c != 0 {
			return c
		}
		return a.Version - b.Version
	})
	return out
}

// subjectNames lists subjects having a version (a live one unless deleted).
func (s *State) subjectNames(prefix string, deleted bool) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := []string{}
	for name, vs := range s.subjects {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if deleted || slices.ContainsFunc(vs, func(v *SchemaVersion) bool { return !v.Deleted }) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// versions copies a subject's versions (live ones unless deleted).
func (s *State) versions(subject string, deleted bool) []SchemaVersion {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []SchemaVersion
	for _, v := range s.subjects[subject] {
		if deleted || !v.Deleted {
			out = append(out, *v)
		}
	}
	return out
}

// idFor is the id of a schema already registered somewhere, for reuse.
func (s *State) idFor(typ, text string, refs []Reference) (int, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	id, ok := s.byText[schemaKeyOf(typ, text, refs)]
	return id, ok
}

func (s *State) nextID() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.maxID + 1
}

// referencedBy lists the ids of live versions referencing subject/version.
func (s *State) referencedBy(subject string, version int) []int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	seen := map[int]bool{}
	for _, vs := range s.subjects {
		for _, v := range vs {
			if v.Deleted {
				continue
			}
			for _, r := range v.References {
				if r.Subject == subject && r.Version == version {
					seen[v.ID] = true
				}
			}
		}
	}
	out := []int{}
	for id := range seen {
		out = append(out, id)
	}
	sort.Ints(out)
	return out
}

// config is a subject's own compatibility level ("" for the global one);
// ok is false when none is set.
func (s *State) config(subject string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.configs[subject]
	return c, ok
}

func (s *State) mode(subject string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, ok := s.modes[subject]
	return m, ok
}

// empty reports whether no subject has any version.
func (s *State) empty() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.subjects) == 0
}
