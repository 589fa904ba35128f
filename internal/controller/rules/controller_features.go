package rules

// UpdateFeatures (KIP-584, KIP-778) on the controller: feature level
// changes validated as Kafka's FeatureControlManager does and committed as
// FeatureLevelRecords, all of a request's or none.

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// UpgradeType is how a feature update may move a level (KIP-778).
type UpgradeType int8

// Kafka's FeatureUpdate.UpgradeType values.
const (
	UpgradeTypeUpgrade         UpgradeType = 1
	UpgradeTypeSafeDowngrade   UpgradeType = 2
	UpgradeTypeUnsafeDowngrade UpgradeType = 3
)

// FeatureUpdate asks for one feature's finalized level (0 disables it).
type FeatureUpdate struct {
	Feature string
	Level   int16
	Type    UpgradeType
}

// UpdateFeatures validates the updates against the image and the supported
// ranges and, unless validateOnly, commits them. The first invalid update
// fails the whole request with INVALID_UPDATE_VERSION (an unknown upgrade
// type too), as Kafka's controller does; a repeated feature is
// INVALID_REQUEST. Updates to the current level write nothing.
func (c *Controller) UpdateFeatures(ctx context.Context, updates []FeatureUpdate, validateOnly bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	current := c.log.Image().Features()
	seen := make(map[string]bool, len(updates))
	var recs []metadata.Record
	for _, u := range updates {
		if seen[u.Feature] {
			return fmt.Errorf("%w: feature %s is updated more than once", kerr.InvalidRequest, u.Feature)
		}
		seen[u.Feature] = true
		if err := validateFeatureUpdate(u, current[u.Feature]); err != nil {
			return err
		}
		if u.Level != current[u.Feature] {
			recs = append(recs, &metadata.FeatureLevelRecord{Name: u.Feature, FeatureLevel: u.Level})
		}
	}
	if validateOnly || len(recs) == 0 {
		return nil
	}
	_, err := c.log.Commit(ctx, recs)
	return err
}

// validateFeatureUpdate is FeatureControlManager.updateFeature's checks, in
// its order, with its wording.
func validateFeatureUpdate(u FeatureUpdate, current int16) error {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: Invalid update version %d for feature %s. %s",
			kerr.InvalidUpdateVersion, u.Level, u.Feature, fmt.Sprintf(format, args...))
	}
	if u.Type < UpgradeTypeUpgrade || u.Type > UpgradeTypeUnsafeDowngrade {
		return invalid("The controller does not support the given upgrade type.")
	}
	if u.Level < 0 {
		return invalid("A feature version cannot be less than 0.")
	}
	if u.Feature == metadata.FeatureKRaftVersion {
		// The quorum's own level: 0 for controller.quorum.voters, 1 for a
		// dynamic quorum, fixed by how the nodes were formatted.
		return invalid("kraft.version is set by the metadata quorum's configuration (controller.quorum.voters: 0, controller.quorum.bootstrap.servers: 1) and cannot be changed here.")
	}
	r, known := supportedFeatures[u.Feature]
	switch {
	case !known && u.Level != 0:
		return invalid("The controller does not support this feature.")
	case known && (u.Level < r.Min || u.Level > r.Max):
		if u.Feature == metadata.FeatureMetadataVersion && u.Level == 0 {
			return invalid("metadata.version cannot be disabled.")
		}
		return invalid("The controller only supports versions %d-%d.", r.Min, r.Max)
	}
	switch {
	case u.Level < current && u.Type == UpgradeTypeUpgrade:
		return invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	case u.Level > current && u.Type != UpgradeTypeUpgrade:
		return invalid("Can't downgrade to a newer version.")
	}
	return nil
}

// EnsureFeatures finalizes the bootstrap feature levels the image lacks (a
// new cluster, or one created before features were recorded). The active
// controller calls it when it takes over, so every cluster has a finalized
// metadata.version, as KRaft clusters always do.
func (c *Controller) EnsureFeatures(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	current := c.log.Image().Features()
	want := bootstrapFeatures()
	var recs []metadata.Record
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if _, ok := current[name]; !ok {
			recs = append(recs, &metadata.FeatureLevelRecord{Name: name, FeatureLevel: want[name]})
		}
	}
	if len(recs) == 0 {
		return nil
	}
	_, err := c.log.Commit(ctx, recs)
	return err
}

// supportedFeatures is what UpdateFeatures validates against: this binary's
// features (tests add their own).
var supportedFeatures = metadata.SupportedFeatureRanges()

// bootstrapFeatures are the levels finalized when a cluster first meets a
// controller that knows features: every supported feature whose lowest level
// is above 0, at that level, and those with a bootstrap level of their own
// (metadata.BootstrapLevel: transaction.version 2, as Kafka 4.0).
func bootstrapFeatures() map[string]int16 {
	out := map[string]int16{}
	for name, r := range supportedFeatures {
		if l, ok := metadata.BootstrapLevel(name); ok && l >= r.Min && l <= r.Max {
			out[name] = l
			continue
		}
		if r.Min > 0 {
			out[name] = r.Min
		}
	}
	return out
}
