package broker

// UpdateFeatures (key 57), v0-v2 (KIP-584, KIP-778).
//
// Finalizes feature levels on the active controller (brokers forward the
// request, KIP-590), validated as Kafka's controller validates them
// (rules.Controller.UpdateFeatures): a level outside what this binary
// supports, a downgrade asked as an upgrade or an upgrade asked as a
// downgrade, an unknown upgrade type is INVALID_UPDATE_VERSION; the request
// is all or nothing. v0 has allow_downgrade, read as a safe downgrade as
// Kafka reads it; v1 has upgrade_type and validate_only. The error is the
// top-level error and, up to v1, each feature's result (v2 has no results,
// as Kafka 4). The answer comes once the change is in this node's image.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.UpdateFeatures, 0, 2, (*Broker).handleUpdateFeatures) }

func (b *Broker) handleUpdateFeatures(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.UpdateFeaturesRequest)
	if fwd, ok := b.forwardToController(ctx, r); ok {
		if fr, isResp := fwd.(*kmsg.UpdateFeaturesResponse); isResp && fr.ErrorCode == 0 && !req.ValidateOnly {
			// A client acting on the answer asks this broker's
			// ApiVersions next: wait until its image has the levels.
			b.awaitImage(ctx, func(img *metadata.Image) bool { return hasFeatureLevels(img, req) })
		}
		return fwd, nil
	}
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	updates := make([]rules.FeatureUpdate, 0, len(req.FeatureUpdates))
	for _, fu := range req.FeatureUpdates {
		u := rules.FeatureUpdate{Feature: fu.Feature, Level: fu.MaxVersionLevel, Type: rules.UpgradeType(fu.UpgradeType)}
		if r.Version == 0 {
			u.Type = rules.UpgradeTypeUpgrade
			if fu.AllowDowngrade {
				u.Type = rules.UpgradeTypeSafeDowngrade
			}
		}
		updates = append(updates, u)
	}
	err := b.controller.UpdateFeatures(ctx, updates, req.ValidateOnly)
	if err == nil && !req.ValidateOnly {
		b.awaitImage(ctx, func(img *metadata.Image) bool { return hasFeatureLevels(img, req) })
	}
	resp.ErrorCode = b.errCode(err)
	if err != nil {
		resp.ErrorMessage = errMessage(err)
	}
	if r.Version <= 1 {
		for _, fu := range req.FeatureUpdates {
			res := kmsg.NewUpdateFeaturesResponseResult()
			res.Feature, res.ErrorCode, res.ErrorMessage = fu.Feature, resp.ErrorCode, resp.ErrorMessage
			resp.Results = append(resp.Results, res)
		}
	}
	return resp, nil
}

// hasFeatureLevels reports whether img has every level req asks for.
func hasFeatureLevels(img *metadata.Image, req *kmsg.UpdateFeaturesRequest) bool {
	finalized := img.Features()
	for _, fu := range req.FeatureUpdates {
		if finalized[fu.Feature] != max(fu.MaxVersionLevel, 0) {
			return false
		}
	}
	return true
}
