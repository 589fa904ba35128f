package transforms

import (
	"fmt"
	"regexp"

	"github.com/vltava/vltava/connect"
)

const predicatePrefix = pkgPrefix + "predicates."

func init() {
	connect.RegisterPredicate(predicatePrefix+"TopicNameMatches", version, func() connect.Predicate { return &TopicNameMatches{} })
	connect.RegisterPredicate(predicatePrefix+"HasHeaderKey", version, func() connect.Predicate { return &HasHeaderKey{} })
	connect.RegisterPredicate(predicatePrefix+"RecordIsTombstone", version, func() connect.Predicate { return &RecordIsTombstone{} })
}

// TopicNameMatches holds when the whole topic name matches pattern.
type TopicNameMatches struct {
	closeNone
	re *regexp.Regexp
}

// Config implements connect.Predicate.
func (p *TopicNameMatches) Config() *connect.ConfigDef {
	return noKeys().Define(connect.ConfigKey{Name: "pattern", Type: connect.TypeString, Required: true, Importance: connect.Medium,
		Doc: "A Java regular expression for matching against the name of a record's topic."})
}

// Configure implements connect.Predicate.
func (p *TopicNameMatches) Configure(props map[string]string) error {
	c, err := p.Config().Parse(props)
	if err != nil {
		return err
	}
	pat := c["pattern"].(string)
	if pat == "" {
		return fmt.Errorf("Invalid value  for configuration pattern: String must be non-empty")
	}
	if p.re, err = regexp.Compile(`^(?:` + pat + `)$`); err != nil {
		return fmt.Errorf("Invalid value %s for configuration pattern: entry must be a Java-compatible regular expression: %v", pat, err)
	}
	return nil
}

// Test implements connect.Predicate.
func (p *TopicNameMatches) Test(r *connect.Record) (bool, error) {
	return r.Topic != "" && p.re.MatchString(r.Topic), nil
}

// HasHeaderKey holds when the record has a header with the key name.
type HasHeaderKey struct {
	closeNone
	name string
}

// Config implements connect.Predicate.
func (p *HasHeaderKey) Config() *connect.ConfigDef {
	return noKeys().Define(connect.ConfigKey{Name: "name", Type: connect.TypeString, Required: true, Importance: connect.Medium,
		Doc: "The header name."})
}

// Configure implements connect.Predicate.
func (p *HasHeaderKey) Configure(props map[string]string) error {
	c, err := p.Config().Parse(props)
	if err != nil {
		return err
	}
	if p.name = c["name"].(string); p.name == "" {
		return fmt.Errorf("Invalid value  for configuration name: String must be non-empty")
	}
	return nil
}

// Test implements connect.Predicate.
func (p *HasHeaderKey) Test(r *connect.Record) (bool, error) {
	return r.Header(p.name) != nil, nil
}

// RecordIsTombstone holds for records with a null value.
type RecordIsTombstone struct{ closeNone }

// Config implements connect.Predicate.
func (*RecordIsTombstone) Config() *connect.ConfigDef { return noKeys() }

// Configure implements connect.Predicate.
func (*RecordIsTombstone) Configure(map[string]string) error { return nil }

// Test implements connect.Predicate.
func (*RecordIsTombstone) Test(r *connect.Record) (bool, error) { return r.Value == nil, nil }
