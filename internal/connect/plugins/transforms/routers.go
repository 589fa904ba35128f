package transforms

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/vltava/vltava/connect"
)

func init() {
	connect.RegisterTransformation(pkgPrefix+"RegexRouter", version, func() connect.Transformation { return &RegexRouter{} })
	connect.RegisterTransformation(pkgPrefix+"TimestampRouter", version, func() connect.Transformation { return &TimestampRouter{} })
}

// RegexRouter renames the topic when the whole name matches regex, with
// replacement's $n group references (Kafka's RegexRouter).
type RegexRouter struct {
	closeNone
	re          *regexp.Regexp
	replacement string
}

// Config implements connect.Transformation.
func (t *RegexRouter) Config() *connect.ConfigDef {
	return noKeys().
		Define(connect.ConfigKey{Name: "regex", Type: connect.TypeString, Required: true, Importance: connect.High, Doc: "Regular expression to use for matching."}).
		Define(connect.ConfigKey{Name: "replacement", Type: connect.TypeString, Required: true, Importance: connect.High, Doc: "Replacement string."})
}

// Configure implements connect.Transformation.
func (t *RegexRouter) Configure(props map[string]string) error {
	p, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	re, err := regexp.Compile(`^(?:` + p["regex"].(string) + `)$`)
	if err != nil {
		return fmt.Errorf("Invalid value %s for configuration regex: %v", p["regex"], err)
	}
	t.re = re
	t.replacement = javaReplacement(p["replacement"].(string))
	return nil
}

var groupRef = regexp.MustCompile(`\$(\d+)`)

// javaReplacement turns Java's $1 group references into Go's ${1}, so a
// digit or letter after the reference is not read as part of its name.
func javaReplacement(s string) string {
	return groupRef.ReplaceAllString(s, "$${$1}")
}

// Apply implements connect.Transformation.
func (t *RegexRouter) Apply(r *connect.Record) (*connect.Record, error) {
	if !t.re.MatchString(r.Topic) {
		return r, nil
	}
	c := r.Clone()
	c.Topic = t.re.ReplaceAllString(r.Topic, t.replacement)
	return c, nil
}

// TimestampRouter renames the topic from topic.format, with ${topic} and
// ${timestamp} (the record's timestamp in timestamp.format, UTC), as
// Kafka's TimestampRouter.
type TimestampRouter struct {
	closeNone
	format string
	layout string
}

// Config implements connect.Transformation.
func (t *TimestampRouter) Config() *connect.ConfigDef {
	return noKeys().
		Define(connect.ConfigKey{Name: "topic.format", Type: connect.TypeString, Default: "${topic}-${timestamp}", Importance: connect.High,
			Doc: "Format string which can contain ${topic} and ${timestamp} as placeholders for the topic and timestamp, respectively."}).
		Define(connect.ConfigKey{Name: "timestamp.format", Type: connect.TypeString, Default: "yyyyMMdd", Importance: connect.High,
			Doc: "Format string for the timestamp that is compatible with java.text.SimpleDateFormat."})
}

// Configure implements connect.Transformation.
func (t *TimestampRouter) Configure(props map[string]string) error {
	p, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	t.format = p["topic.format"].(string)
	if t.layout, err = javaLayout(p["timestamp.format"].(string)); err != nil {
		return fmt.Errorf("Invalid value %s for configuration timestamp.format: %v", p["timestamp.format"], err)
	}
	return nil
}

// Apply implements connect.Transformation.
func (t *TimestampRouter) Apply(r *connect.Record) (*connect.Record, error) {
	if r.Timestamp.IsZero() {
		return nil, fmt.Errorf("Timestamp missing on record: %s", r.Topic)
	}
	ts := r.Timestamp.In(time.UTC).Format(t.layout)
	c := r.Clone()
	c.Topic = strings.ReplaceAll(strings.ReplaceAll(t.format, "${topic}", r.Topic), "${timestamp}", ts)
	return c, nil
}
