package rules

// ACL changes (CreateAcls, DeleteAcls), validated against the image and
// committed as AccessControlEntryRecords and RemoveAccessControlEntryRecords,
// as KRaft's AclControlManager: each binding is validated on its own, an
// existing identical binding is kept (no record, success), and a DeleteAcls
// request removes the union of what its filters match in one batch.

import (
	"context"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security/acl"
)

// CreateAcls adds the bindings; the result has one error per binding (nil:
// created or already present). Valid bindings are committed in one batch
// even when others are refused.
func (c *Controller) CreateAcls(ctx context.Context, bindings []acl.Binding) []error {
	errs := make([]error, len(bindings))
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.log.Image()
	existing := img.ACLs()
	var recs []metadata.Record
	var pending []int
	for i, b := range bindings {
		if err := b.Validate(); err != nil {
			errs[i] = err
			continue
		}
		rec := b.Record(metadata.NewUuid())
		dup := false
		existing.Each(func(e *metadata.AccessControlEntryRecord) { dup = dup || rec.SameBinding(e) })
		for _, r := range recs {
			dup = dup || rec.SameBinding(r.(*metadata.AccessControlEntryRecord))
		}
		if dup {
			continue
		}
		recs = append(recs, rec)
		pending = append(pending, i)
	}
	if len(recs) == 0 {
		return errs
	}
	if _, err := c.log.Commit(ctx, recs); err != nil {
		for _, i := range pending {
			errs[i] = err
		}
		return errs
	}
	c.logger.Info("ACLs created", "count", len(recs))
	return errs
}

// DeleteACLsResult is what one DeleteAcls filter matched and removed.
type DeleteACLsResult struct {
	Matched []acl.Binding
	Err     error
}

// DeleteAcls removes every binding the filters match.
func (c *Controller) DeleteAcls(ctx context.Context, filters []acl.Filter) []DeleteACLsResult {
	out := make([]DeleteACLsResult, len(filters))
	c.mu.Lock()
	defer c.mu.Unlock()
	set := c.log.Image().ACLs()
	removed := map[metadata.Uuid]bool{}
	var recs []metadata.Record
	var ok []int
	for i, f := range filters {
		if err := f.Validate(); err != nil {
			out[i].Err = err
			continue
		}
		for _, r := range acl.Match(set, f) {
			out[i].Matched = append(out[i].Matched, acl.FromRecord(r))
			if !removed[r.ID] {
				removed[r.ID] = true
				recs = append(recs, &metadata.RemoveAccessControlEntryRecord{ID: r.ID})
			}
		}
		ok = append(ok, i)
	}
	if len(recs) == 0 {
		return out
	}
	if _, err := c.log.Commit(ctx, recs); err != nil {
		for _, i := range ok {
			out[i] = DeleteACLsResult{Err: err}
		}
		return out
	}
	c.logger.Info("ACLs deleted", "count", len(recs))
	return out
}
