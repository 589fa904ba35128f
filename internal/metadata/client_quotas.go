package metadata

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Client quotas as KRaft keeps them (Kafka's QuotaRecord, apiKey 14, named
// ClientQuotaRecord before 3.x): one record per (entity, key), setting a
// value or removing it. An entity is a combination of user, client-id and
// ip components (user and client-id may be combined, ip stands alone), each
// a name or the default entity ("<default>" in kafka-configs.sh, a null name
// on the wire). Which combinations and keys are valid is the controller's
// rule (internal/security/quota); the image only stores what was committed.

// ClientQuotaRecordType is Kafka's QuotaRecord apiKey.
const ClientQuotaRecordType RecordType = 14

// Quota entity types, as the ClientQuota APIs name them.
const (
	QuotaEntityUser     = "user"
	QuotaEntityClientID = "client-id"
	QuotaEntityIP       = "ip"
)

// QuotaEntityData is one component of a quota entity: its type and its
// name, nil for the default entity of that type.
type QuotaEntityData struct {
	EntityType string  `json:"entity_type"`
	EntityName *string `json:"entity_name"`
}

// ClientQuotaRecord sets (Remove false) or removes one quota key of an
// entity.
type ClientQuotaRecord struct {
	Entity []QuotaEntityData `json:"entity"`
	Key    string            `json:"key"`
	Value  float64           `json:"value"`
	Remove bool              `json:"remove,omitempty"`
}

func (*ClientQuotaRecord) Type() RecordType { return ClientQuotaRecordType }
func (*ClientQuotaRecord) isRecord()        {}

// QuotaEntityName is one component of a QuotaEntity: absent (the zero
// value), the default entity, or a name.
type QuotaEntityName struct {
	Set     bool
	Default bool
	Name    string
}

// QuotaName is the component naming name.
func QuotaName(name string) QuotaEntityName { return QuotaEntityName{Set: true, Name: name} }

// QuotaDefault is the default-entity component.
var QuotaDefault = QuotaEntityName{Set: true, Default: true}

// String is kafka-configs.sh's form: the name, or "<default>".
func (n QuotaEntityName) String() string {
	if n.Default {
		return "<default>"
	}
	return n.Name
}

// namePtr is the wire form: nil for the default.
func (n QuotaEntityName) namePtr() *string {
	if n.Default {
		return nil
	}
	return StringPtr(n.Name)
}

// QuotaEntity is a client quota entity: a comparable value, usable as a
// map key.
type QuotaEntity struct {
	User, ClientID, IP QuotaEntityName
}

// Data is the entity as record or wire components, in the order user,
// client-id, ip.
func (e QuotaEntity) Data() []QuotaEntityData {
	var out []QuotaEntityData
	for _, c := range []struct {
		typ string
		n   QuotaEntityName
	}{{QuotaEntityUser, e.User}, {QuotaEntityClientID, e.ClientID}, {QuotaEntityIP, e.IP}} {
		if c.n.Set {
			out = append(out, QuotaEntityData{EntityType: c.typ, EntityName: c.n.namePtr()})
		}
	}
	return out
}

// Empty reports whether the entity has no component.
func (e QuotaEntity) Empty() bool { return !e.User.Set && !e.ClientID.Set && !e.IP.Set }

// String is for logs: "user=alice,client-id=<default>".
func (e QuotaEntity) String() string {
	var parts []string
	for _, d := range e.Data() {
		n := "<default>"
		if d.EntityName != nil {
			n = *d.EntityName
		}
		parts = append(parts, d.EntityType+"="+n)
	}
	return strings.Join(parts, ",")
}

// QuotaEntityOf builds an entity from its components; an unknown or
// repeated type is an error.
func QuotaEntityOf(data []QuotaEntityData) (QuotaEntity, error) {
	var e QuotaEntity
	for _, d := range data {
		var c *QuotaEntityName
		switch d.EntityType {
		case QuotaEntityUser:
			c = &e.User
		case QuotaEntityClientID:
			c = &e.ClientID
		case QuotaEntityIP:
			c = &e.IP
		default:
			return QuotaEntity{}, fmt.Errorf("unknown quota entity type %q", d.EntityType)
		}
		if c.Set {
			return QuotaEntity{}, fmt.Errorf("quota entity type %q given twice", d.EntityType)
		}
		if d.EntityName == nil {
			*c = QuotaDefault
		} else {
			*c = QuotaName(*d.EntityName)
		}
	}
	return e, nil
}

// ClientQuotas is the quota part of an Image: each entity's keys and
// values. It is immutable and replaced whole when a ClientQuotaRecord is
// applied, so a reader can tell a change by pointer.
type ClientQuotas struct {
	entities map[QuotaEntity]map[string]float64
}

// Len is the number of entities with quotas.
func (q *ClientQuotas) Len() int {
	if q == nil {
		return 0
	}
	return len(q.entities)
}

// Get returns an entity's quotas (shared: do not modify).
func (q *ClientQuotas) Get(e QuotaEntity) map[string]float64 {
	if q == nil {
		return nil
	}
	return q.entities[e]
}

// Each calls fn for every entity (the map is shared: do not modify).
func (q *ClientQuotas) Each(fn func(QuotaEntity, map[string]float64)) {
	if q == nil {
		return
	}
	for e, m := range q.entities {
		fn(e, m)
	}
}

// ClientQuotas returns the image's client quotas; nil when there are none.
// The pointer changes exactly when a quota changes.
func (img *Image) ClientQuotas() *ClientQuotas { return img.clientQuotas }

func (b *imageBuilder) applyClientQuota(r *ClientQuotaRecord) error {
	e, err := QuotaEntityOf(r.Entity)
	if err != nil {
		return err
	}
	if e.Empty() {
		return fmt.Errorf("empty quota entity")
	}
	if r.Key == "" {
		return fmt.Errorf("empty quota key")
	}
	next := &ClientQuotas{entities: map[QuotaEntity]map[string]float64{}}
	if b.clientQuotas != nil {
		maps.Copy(next.entities, b.clientQuotas.entities)
	}
	vals := maps.Clone(next.entities[e])
	if vals == nil {
		vals = map[string]float64{}
	}
	if r.Remove {
		delete(vals, r.Key)
	} else {
		vals[r.Key] = r.Value
	}
	if len(vals) == 0 {
		delete(next.entities, e)
	} else {
		next.entities[e] = vals
	}
	if len(next.entities) == 0 {
		next = nil
	}
	b.clientQuotas = next
	return nil
}

// appendClientQuotaRecords adds the records rebuilding q, in a stable
// order, for snapshots.
func appendClientQuotaRecords(recs []Record, q *ClientQuotas) []Record {
	if q == nil {
		return recs
	}
	entities := slices.Collect(maps.Keys(q.entities))
	slices.SortFunc(entities, func(a, b QuotaEntity) int { return strings.Compare(a.String(), b.String()) })
	for _, e := range entities {
		vals := q.entities[e]
		for _, k := range slices.Sorted(maps.Keys(vals)) {
			recs = append(recs, &ClientQuotaRecord{Entity: e.Data(), Key: k, Value: vals[k]})
		}
	}
	return recs
}
