package cli

// kafka-configs.sh's client quota forms: --entity-type users|clients|ips
// with --entity-name or --entity-default, users and clients combinable
// (--entity-type users --entity-name alice --entity-type clients
// --entity-default is /config/users/alice/clients/<default>), through
// DescribeClientQuotas and AlterClientQuotas (kadm). Without a name or
// default, --describe lists every entity of the types given, as
// kafka-configs.sh does.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
)

// entityArgs records --entity-type, --entity-name and --entity-default in
// the order given: kafka-configs.sh pairs the n-th type with the n-th name
// or default. One entityArgs is shared by `configs` and its subcommands,
// so the Kafka form (`configs --alter ...`) keeps the order too.
type entityArgs struct {
	types []string
	names []*string // nil: --entity-default
}

type entityTypeValue struct{ e *entityArgs }
type entityNameValue struct{ e *entityArgs }
type entityDefaultValue struct{ e *entityArgs }

func (v entityTypeValue) String() string { return strings.Join(v.e.types, ",") }
func (v entityTypeValue) Type() string   { return "string" }
func (v entityTypeValue) Set(s string) error {
	v.e.types = append(v.e.types, s)
	return nil
}
func (v entityNameValue) String() string { return "" }
func (v entityNameValue) Type() string   { return "string" }
func (v entityNameValue) Set(s string) error {
	v.e.names = append(v.e.names, &s)
	return nil
}
func (v entityDefaultValue) String() string { return "false" }
func (v entityDefaultValue) Type() string   { return "bool" }
func (v entityDefaultValue) IsBoolFlag() bool {
	return true
}
func (v entityDefaultValue) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	if on {
		v.e.names = append(v.e.names, nil)
	}
	return nil
}

// register adds the three flags to fs, unless fs has them already.
func (e *entityArgs) register(fs *pflag.FlagSet) {
	if fs.Lookup("entity-type") != nil {
		return
	}
	fs.Var(entityTypeValue{e}, "entity-type", "Kafka's entity type: topics, brokers, groups, users, clients or ips (users and clients may be combined)")
	fs.Var(entityNameValue{e}, "entity-name", "Kafka's entity name: the topic, broker id, group, user, client id or ip")
	fs.Var(entityDefaultValue{e}, "entity-default", "Kafka's default entity (brokers: the broker defaults; users, clients, ips: the default quota entity)")
	fs.Lookup("entity-default").NoOptDefVal = "true"
}

// quotaEntityTypes maps kafka-configs.sh's entity types to the quota API's.
var quotaEntityTypes = map[string]string{"users": "user", "clients": "client-id", "ips": "ip"}

// isQuotaEntity reports whether the entity types name a quota entity.
func (e *entityArgs) isQuotaEntity() bool {
	for _, t := range e.types {
		if _, ok := quotaEntityTypes[t]; ok {
			return true
		}
	}
	return false
}

// quotaTarget is the quota entity a `configs` command acts on; a component
// with any set matches every entity of its type (describe only).
type quotaTarget struct {
	components []quotaComponent
}

type quotaComponent struct {
	typ  string  // the quota API's entity type
	name *string // nil: the default entity
	any  bool    // no name or default given
}

// quotaTarget pairs the recorded types with names and defaults.
func (e *entityArgs) quotaTarget() (*quotaTarget, error) {
	if len(e.names) > len(e.types) {
		return nil, errors.New("more --entity-name/--entity-default than --entity-type")
	}
	t := &quotaTarget{}
	seen := map[string]bool{}
	for i, typ := range e.types {
		qt, ok := quotaEntityTypes[typ]
		if !ok {
			return nil, fmt.Errorf("--entity-type %s cannot be combined with %s", typ, strings.Join(e.types, ", "))
		}
		if seen[qt] {
			return nil, fmt.Errorf("--entity-type %s given twice", typ)
		}
		seen[qt] = true
		c := quotaComponent{typ: qt, any: i >= len(e.names)}
		if !c.any {
			c.name = e.names[i]
		}
		t.components = append(t.components, c)
	}
	if seen["ip"] && len(t.components) > 1 {
		return nil, errors.New("--entity-type ips cannot be combined with users or clients")
	}
	return t, nil
}

// String is kafka-configs.sh's wording of an entity.
func (t *quotaTarget) String() string {
	var parts []string
	for _, c := range t.components {
		parts = append(parts, describeQuotaComponent(kadm.ClientQuotaEntityComponent{Type: c.typ, Name: c.name}))
	}
	return strings.Join(parts, ", ")
}

func describeQuotaComponent(c kadm.ClientQuotaEntityComponent) string {
	what := map[string]string{"user": "user-principal", "client-id": "client-id", "ip": "ip"}[c.Type]
	if what == "" {
		what = c.Type
	}
	if c.Name == nil {
		return "the default " + what
	}
	return fmt.Sprintf("%s '%s'", what, *c.Name)
}

// quotaEntry is one row of `configs describe` for quota entities.
type quotaEntry struct {
	Entity map[string]*string `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// describeQuotas prints the quotas of the target's entities (strict: only
// entities of exactly those types, as kafka-configs.sh asks).
func describeQuotas(ctx context.Context, adm *kadm.Client, t *quotaTarget, asJSON bool, out io.Writer) error {
	var comps []kadm.DescribeClientQuotaComponent
	for _, c := range t.components {
		dc := kadm.DescribeClientQuotaComponent{Type: c.typ, MatchName: c.name}
		switch {
		case c.any:
			dc.MatchType = 2
		case c.name == nil:
			dc.MatchType = 1
		}
		comps = append(comps, dc)
	}
	described, err := adm.DescribeClientQuotas(ctx, true, comps)
	if err != nil {
		return fmt.Errorf("describing quotas of %s: %w", t, err)
	}
	if asJSON {
		rows := []quotaEntry{}
		for _, d := range described {
			row := quotaEntry{Entity: map[string]*string{}, Values: map[string]float64{}}
			for _, c := range d.Entity {
				row.Entity[c.Type] = c.Name
			}
			for _, v := range d.Values {
				row.Values[v.Key] = v.Value
			}
			rows = append(rows, row)
		}
		return writeJSON(out, rows)
	}
	for _, d := range described {
		var who, vals []string
		for _, c := range d.Entity {
			who = append(who, describeQuotaComponent(c))
		}
		for _, v := range d.Values {
			vals = append(vals, v.Key+"="+javaDouble(v.Value))
		}
		fmt.Fprintf(out, "Quota configs for %s are %s\n", strings.Join(who, ", "), strings.Join(vals, ", "))
	}
	return nil
}

// javaDouble prints a value as Java's Double.toString does for the values
// quotas take (1024.0, 12.5), as kafka-configs.sh shows them.
func javaDouble(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e7 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// alterQuotas sets and removes quota keys of the target entity.
func alterQuotas(ctx context.Context, adm *kadm.Client, t *quotaTarget, set [][2]string, del []string) error {
	entry := kadm.AlterClientQuotaEntry{}
	for _, c := range t.components {
		if c.any {
			return fmt.Errorf("--entity-type %s needs --entity-name or --entity-default to alter", c.typ)
		}
		entry.Entity = append(entry.Entity, kadm.ClientQuotaEntityComponent{Type: c.typ, Name: c.name})
	}
	var scram [][2]string
	for _, kv := range set {
		if strings.HasPrefix(kv[0], "SCRAM-SHA-") {
			scram = append(scram, kv)
			continue
		}
		v, err := strconv.ParseFloat(kv[1], 64)
		if err != nil {
			return fmt.Errorf("quota %s=%s: the value must be a number", kv[0], kv[1])
		}
		entry.Ops = append(entry.Ops, kadm.AlterClientQuotaOp{Key: kv[0], Value: v})
	}
	var scramDeletes []string
	for _, k := range del {
		if strings.HasPrefix(k, "SCRAM-SHA-") {
			scramDeletes = append(scramDeletes, k)
			continue
		}
		entry.Ops = append(entry.Ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
	}
	if len(scram) > 0 || len(scramDeletes) > 0 {
		if err := alterScramCredentials(ctx, adm, t, scram, scramDeletes); err != nil {
			return err
		}
	}
	if len(entry.Ops) == 0 {
		return nil
	}
	altered, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{entry})
	if err != nil {
		return fmt.Errorf("altering quotas of %s: %w", t, err)
	}
	for _, a := range altered {
		if a.Err != nil {
			return fmt.Errorf("altering quotas of %s: %w%s", t, a.Err, detail(a.ErrMessage))
		}
	}
	return nil
}

// alterScramCredentials is kafka-configs.sh's
// --add-config 'SCRAM-SHA-256=[iterations=8192,password=…]' and
// --delete-config SCRAM-SHA-256 for --entity-type users
// (AlterUserScramCredentials), which SCRAM authentication brings.
func alterScramCredentials(ctx context.Context, adm *kadm.Client, t *quotaTarget, upserts [][2]string, deletes []string) error {
	user, ok := t.singleUser()
	if !ok {
		return fmt.Errorf("SCRAM credentials belong to one named user (--entity-type users --entity-name NAME), not %s", t)
	}
	return alterUserScram(ctx, adm, user, upserts, deletes)
}

// singleUser is the user of a target naming exactly one user and nothing
// else: the only entity SCRAM credentials belong to.
func (t *quotaTarget) singleUser() (string, bool) {
	if len(t.components) != 1 {
		return "", false
	}
	c := t.components[0]
	if c.typ != "user" || c.any || c.name == nil {
		return "", false
	}
	return *c.name, true
}
