package rules

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

func TestEnsureFeaturesBootstraps(t *testing.T) {
	c, l := newTestController(t, 1, ControllerConfig{})
	ctx := context.Background()
	if err := c.EnsureFeatures(ctx); err != nil {
		t.Fatal(err)
	}
	f := l.Image().Features()
	if f[metadata.FeatureMetadataVersion] != metadata.MetadataVersion40IV0 || f[metadata.FeatureGroupVersion] != 1 ||
		f[metadata.FeatureTransactionVersion] != 2 || len(f) != 3 {
		t.Fatalf("finalized %v, want metadata.version %d, group.version 1 and transaction.version 2 (Kafka 4.0's default)", f, metadata.MetadataVersion40IV0)
	}
	off := l.Image().Offset()
	if err := c.EnsureFeatures(ctx); err != nil || l.Image().Offset() != off {
		t.Errorf("second EnsureFeatures wrote records (offset %d -> %d) or failed: %v", off, l.Image().Offset(), err)
	}
}

// TestUpdateFeatures drives Kafka's FeatureControlManager rules over a
// feature with several supported levels (none of the real ones has more
// than one level yet).
func TestUpdateFeatures(t *testing.T) {
	supportedFeatures["test.feature"] = metadata.FeatureRange{Min: 0, Max: 3}
	t.Cleanup(func() { delete(supportedFeatures, "test.feature") })
	c, l := newTestController(t, 1, ControllerConfig{})
	ctx := context.Background()
	if err := c.EnsureFeatures(ctx); err != nil {
		t.Fatal(err)
	}
	level := func() int16 { return l.Image().Features()["test.feature"] }
	for _, s := range []struct {
		name  string
		to    int16
		typ   UpgradeType
		want  error
		level int16
	}{
		{"upgrade 0 -> 2", 2, UpgradeTypeUpgrade, nil, 2},
		{"downgrade asked as upgrade", 1, UpgradeTypeUpgrade, kerr.InvalidUpdateVersion, 2},
		{"upgrade asked as downgrade", 3, UpgradeTypeSafeDowngrade, kerr.InvalidUpdateVersion, 2},
		{"beyond the supported range", 4, UpgradeTypeUpgrade, kerr.InvalidUpdateVersion, 2},
		{"negative level", -1, UpgradeTypeUnsafeDowngrade, kerr.InvalidUpdateVersion, 2},
		{"unknown upgrade type", 3, 0, kerr.InvalidUpdateVersion, 2},
		{"safe downgrade 2 -> 1", 1, UpgradeTypeSafeDowngrade, nil, 1},
		{"same level", 1, UpgradeTypeUpgrade, nil, 1},
		{"disable (level 0)", 0, UpgradeTypeUnsafeDowngrade, nil, 0},
	} {
		err := c.UpdateFeatures(ctx, []FeatureUpdate{{Feature: "test.feature", Level: s.to, Type: s.typ}}, false)
		if (s.want == nil && err != nil) || (s.want != nil && !errors.Is(err, s.want)) {
			t.Errorf("%s: %v, want %v", s.name, err, s.want)
		}
		if level() != s.level {
			t.Errorf("%s: level %d, want %d", s.name, level(), s.level)
		}
	}
	if level() != 0 {
		t.Errorf("final level %d, want 0", level())
	}
	if _, ok := l.Image().Features()["test.feature"]; ok {
		t.Error("a feature disabled to level 0 is still finalized")
	}

	// All or nothing: a valid update next to an invalid one is not applied.
	err := c.UpdateFeatures(ctx, []FeatureUpdate{
		{Feature: "test.feature", Level: 1, Type: UpgradeTypeUpgrade},
		{Feature: metadata.FeatureTransactionVersion, Level: 3, Type: UpgradeTypeUpgrade},
	}, false)
	if !errors.Is(err, kerr.InvalidUpdateVersion) || level() != 0 {
		t.Errorf("mixed request: %v, level %d; want INVALID_UPDATE_VERSION and nothing applied", err, level())
	}
	if err := c.UpdateFeatures(ctx, []FeatureUpdate{{Feature: "test.feature", Level: 3, Type: UpgradeTypeUpgrade}}, true); err != nil || level() != 0 {
		t.Errorf("validate only: %v, level %d", err, level())
	}
	dup := []FeatureUpdate{{Feature: "test.feature", Level: 1, Type: UpgradeTypeUpgrade}, {Feature: "test.feature", Level: 2, Type: UpgradeTypeUpgrade}}
	if err := c.UpdateFeatures(ctx, dup, false); !errors.Is(err, kerr.InvalidRequest) {
		t.Errorf("repeated feature: %v, want INVALID_REQUEST", err)
	}
	for _, u := range []FeatureUpdate{
		{Feature: metadata.FeatureMetadataVersion, Level: 0, Type: UpgradeTypeUnsafeDowngrade},
		{Feature: metadata.FeatureMetadataVersion, Level: 21, Type: UpgradeTypeSafeDowngrade},
		{Feature: metadata.FeatureGroupVersion, Level: 0, Type: UpgradeTypeSafeDowngrade},
		{Feature: metadata.FeatureKRaftVersion, Level: 1, Type: UpgradeTypeUpgrade},
		{Feature: "no.such.feature", Level: 1, Type: UpgradeTypeUpgrade},
	} {
		if err := c.UpdateFeatures(ctx, []FeatureUpdate{u}, false); !errors.Is(err, kerr.InvalidUpdateVersion) {
			t.Errorf("%s to %d: %v, want INVALID_UPDATE_VERSION", u.Feature, u.Level, err)
		}
	}
	if err := c.UpdateFeatures(ctx, []FeatureUpdate{{Feature: "no.such.feature", Level: 0, Type: UpgradeTypeSafeDowngrade}}, false); err != nil {
		t.Errorf("disabling an unknown (never finalized) feature: %v, want success", err)
	}
}
