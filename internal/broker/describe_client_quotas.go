package broker

// DescribeClientQuotas (key 48), v0-v1.
//
// Answered from this broker's metadata image, as Kafka's brokers answer it
// from their ClientQuotasImage. The filter's components each name an
// entity type (user, client-id, ip) once and match a name (exact), the
// default entity (default) or any entity having that type (specified, "any"
// in kadm). Without strict, an entity matches when it satisfies every
// component, whatever other types it has; with strict, it must have no
// other types. No component and not strict lists every entity; no
// component and strict lists none. A type named twice, an exact match
// without a name, a default or any match with one, an unknown match type,
// or ip combined with user or client-id is INVALID_REQUEST; an unknown
// entity type UNSUPPORTED_VERSION (Kafka's answers).

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.DescribeClientQuotas, 0, 1, (*Broker).handleDescribeClientQuotas) }

// The match types of a DescribeClientQuotas component.
const (
	quotaMatchExact     = 0
	quotaMatchDefault   = 1
	quotaMatchSpecified = 2
)

func (b *Broker) handleDescribeClientQuotas(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	filter, err := parseQuotaFilter(req)
	if err != nil {
		resp.ErrorCode = b.errCode(err)
		resp.ErrorMessage = errMessage(err)
		return resp, nil
	}
	var entities []metadata.QuotaEntity
	b.meta.Image().ClientQuotas().Each(func(e metadata.QuotaEntity, _ map[string]float64) {
		if filter.matches(e) {
			entities = append(entities, e)
		}
	})
	slices.SortFunc(entities, func(x, y metadata.QuotaEntity) int { return strings.Compare(x.String(), y.String()) })
	q := b.meta.Image().ClientQuotas()
	for _, e := range entities {
		se := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, d := range e.Data() {
			sc := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			sc.Type, sc.Name = d.EntityType, d.EntityName
			se.Entity = append(se.Entity, sc)
		}
		vals := q.Get(e)
		for _, k := range slices.Sorted(maps.Keys(vals)) {
			sv := kmsg.NewDescribeClientQuotasResponseEntryValue()
			sv.Key, sv.Value = k, vals[k]
			se.Values = append(se.Values, sv)
		}
		resp.Entries = append(resp.Entries, se)
	}
	return resp, nil
}

// quotaFilter is a parsed DescribeClientQuotas filter: per entity type,
// the component it must have (Set false: not constrained).
type quotaFilter struct {
	constrained map[string]bool
	exact       map[string]metadata.QuotaEntityName // exact or default
	strict      bool
}

func parseQuotaFilter(req *kmsg.DescribeClientQuotasRequest) (quotaFilter, error) {
	f := quotaFilter{constrained: map[string]bool{}, exact: map[string]metadata.QuotaEntityName{}, strict: req.Strict}
	for _, c := range req.Components {
		switch {
		case c.EntityType == "":
			return f, fmt.Errorf("%w: Invalid empty entity type.", kerr.InvalidRequest)
		case f.constrained[c.EntityType]:
			return f, fmt.Errorf("%w: Entity type %s cannot appear more than once in the filter.", kerr.InvalidRequest, c.EntityType)
		}
		switch c.EntityType {
		case metadata.QuotaEntityUser, metadata.QuotaEntityClientID, metadata.QuotaEntityIP:
		default:
			return f, fmt.Errorf("%w: Unsupported entity type %s", kerr.UnsupportedVersion, c.EntityType)
		}
		f.constrained[c.EntityType] = true
		switch c.MatchType {
		case quotaMatchExact:
			if c.Match == nil {
				return f, fmt.Errorf("%w: Request specified MATCH_TYPE_EXACT, but set match string to null.", kerr.InvalidRequest)
			}
			f.exact[c.EntityType] = metadata.QuotaName(*c.Match)
		case quotaMatchDefault:
			if c.Match != nil {
				return f, fmt.Errorf("%w: Request specified MATCH_TYPE_DEFAULT, but also specified a match string.", kerr.InvalidRequest)
			}
			f.exact[c.EntityType] = metadata.QuotaDefault
		case quotaMatchSpecified:
			if c.Match != nil {
				return f, fmt.Errorf("%w: Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.", kerr.InvalidRequest)
			}
		default:
			return f, fmt.Errorf("%w: Unknown match type %d", kerr.InvalidRequest, c.MatchType)
		}
	}
	if f.constrained[metadata.QuotaEntityIP] && (f.constrained[metadata.QuotaEntityUser] || f.constrained[metadata.QuotaEntityClientID]) {
		return f, fmt.Errorf("%w: Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.", kerr.InvalidRequest)
	}
	return f, nil
}

// matches is Kafka's ClientQuotasImage matching.
func (f quotaFilter) matches(e metadata.QuotaEntity) bool {
	if len(f.constrained) == 0 {
		return !f.strict
	}
	for typ, n := range map[string]metadata.QuotaEntityName{
		metadata.QuotaEntityUser: e.User, metadata.QuotaEntityClientID: e.ClientID, metadata.QuotaEntityIP: e.IP,
	} {
		if !f.constrained[typ] {
			if f.strict && n.Set {
				return false
			}
			continue
		}
		if !n.Set {
			return false
		}
		if want, ok := f.exact[typ]; ok && want != n {
			return false
		}
	}
	return true
}
