package rules

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security/quota"
)

// QuotaAlteration is one entity's part of an AlterClientQuotas request.
type QuotaAlteration struct {
	Entity []metadata.QuotaEntityData
	Ops    []QuotaOp
}

// QuotaOp sets Key to Value, or removes it when Value is nil.
type QuotaOp struct {
	Key   string
	Value *float64
}

// AlterClientQuotas validates each entity's alteration as Kafka's
// ClientQuotaControlManager does and commits the records of those that
// pass, together, as one batch; errs[i] is the outcome of alts[i]. An
// entity named twice, a key named twice for an entity, an invalid entity
// or key or value fail that entity (INVALID_REQUEST) and nothing of it is
// written. validateOnly commits nothing.
func (c *Controller) AlterClientQuotas(ctx context.Context, alts []QuotaAlteration, validateOnly bool) (errs []error, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.log.Image().ClientQuotas()
	errs = make([]error, len(alts))
	seen := map[metadata.QuotaEntity]bool{}
	var recs []metadata.Record
	for i, a := range alts {
		e, err := quota.ValidateEntity(a.Entity)
		if err != nil {
			errs[i] = err
			continue
		}
		if seen[e] {
			errs[i] = fmt.Errorf("%w: Ignoring duplicate entity %s", kerr.InvalidRequest, e)
			continue
		}
		seen[e] = true
		entityRecs, err := quotaRecords(e, cur.Get(e), a.Ops)
		if err != nil {
			errs[i] = err
			continue
		}
		recs = append(recs, entityRecs...)
	}
	if validateOnly || len(recs) == 0 {
		return errs, nil
	}
	if _, err := c.log.Commit(ctx, recs); err != nil {
		return nil, err
	}
	return errs, nil
}

// quotaRecords turns one entity's ops into records: only changes are
// written (a removal of an absent key, or a value set again, is none).
func quotaRecords(e metadata.QuotaEntity, current map[string]float64, ops []QuotaOp) ([]metadata.Record, error) {
	keys := map[string]bool{}
	var recs []metadata.Record
	for _, op := range ops {
		if keys[op.Key] {
			return nil, fmt.Errorf("%w: Duplicate quota key %s not updating quota for this entity %s", kerr.InvalidRequest, op.Key, e)
		}
		keys[op.Key] = true
		if err := quota.ValidateKeyValue(e, op.Key, op.Value); err != nil {
			return nil, err
		}
		old, had := current[op.Key]
		switch {
		case op.Value == nil && had:
			recs = append(recs, &metadata.ClientQuotaRecord{Entity: e.Data(), Key: op.Key, Remove: true})
		case op.Value != nil && (!had || old != *op.Value):
			recs = append(recs, &metadata.ClientQuotaRecord{Entity: e.Data(), Key: op.Key, Value: *op.Value})
		}
	}
	return recs, nil
}
