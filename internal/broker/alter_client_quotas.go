package broker

// AlterClientQuotas (key 49), v0-v1.
//
// Sets or removes quota keys of user, client-id, user+client-id and ip
// entities, each component a name or the default entity (a null name).
// Answered by the active controller (forwarded from other brokers, as
// Kafka's brokers forward it, KIP-590), which validates each entity as
// Kafka's ClientQuotaControlManager: known entity types, each once, no
// empty name, an ip alone and a valid address, the entity's own keys
// (producer_byte_rate, consumer_byte_rate, request_percentage,
// controller_mutation_rate; connection_creation_rate for ip; SCRAM
// mechanisms are not quota keys), values above zero, whole values for the
// integral keys, no key or entity twice. Each failure is
// INVALID_REQUEST for that entry only; the records of the others are
// committed as one batch. validate_only checks and commits nothing. The
// answer comes once the local image shows the change, so a
// DescribeClientQuotas to this broker right after sees it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security/quota"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.AlterClientQuotas, 0, 1, (*Broker).handleAlterClientQuotas) }

func (b *Broker) handleAlterClientQuotas(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterClientQuotasRequest)
	alts := make([]rules.QuotaAlteration, len(req.Entries))
	for i, e := range req.Entries {
		for _, c := range e.Entity {
			alts[i].Entity = append(alts[i].Entity, metadata.QuotaEntityData{EntityType: c.Type, EntityName: c.Name})
		}
		for _, op := range e.Ops {
			o := rules.QuotaOp{Key: op.Key}
			if !op.Remove {
				v := op.Value
				o.Value = &v
			}
			alts[i].Ops = append(alts[i].Ops, o)
		}
	}
	if fwd, ok := b.forwardToController(ctx, r); ok {
		if resp, isAlter := fwd.(*kmsg.AlterClientQuotasResponse); isAlter && !req.ValidateOnly {
			b.awaitImage(ctx, func(img *metadata.Image) bool { return quotasApplied(img, alts, resp) })
		}
		return fwd, nil
	}
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	errs, err := b.controller.AlterClientQuotas(ctx, alts, req.ValidateOnly)
	for i, e := range req.Entries {
		se := kmsg.NewAlterClientQuotasResponseEntry()
		for _, c := range e.Entity {
			sc := kmsg.NewAlterClientQuotasResponseEntryEntity()
			sc.Type, sc.Name = c.Type, c.Name
			se.Entity = append(se.Entity, sc)
		}
		entryErr := err
		if err == nil {
			entryErr = errs[i]
		}
		se.ErrorCode = b.errCode(entryErr)
		if entryErr != nil {
			se.ErrorMessage = errMessage(entryErr)
		}
		resp.Entries = append(resp.Entries, se)
	}
	if err == nil && !req.ValidateOnly {
		b.awaitMetadata(ctx)
	}
	return resp, nil
}

// quotasApplied reports whether img shows every alteration the
// controller accepted: a forwarded change reaches this broker's image a
// moment after the controller answers.
func quotasApplied(img *metadata.Image, alts []rules.QuotaAlteration, resp *kmsg.AlterClientQuotasResponse) bool {
	for i, a := range alts {
		if i >= len(resp.Entries) || resp.Entries[i].ErrorCode != 0 {
			continue
		}
		e, err := quota.ValidateEntity(a.Entity)
		if err != nil {
			continue
		}
		cur := img.ClientQuotas().Get(e)
		for _, op := range a.Ops {
			v, had := cur[op.Key]
			if op.Value == nil && had || op.Value != nil && (!had || v != *op.Value) {
				return false
			}
		}
	}
	return true
}
