package metadata

// Feature flags (KIP-584): the cluster-wide levels of features that change
// what brokers and controllers write or serve. The finalized level of each
// is a FeatureLevelRecord in the log (level 0, the default, is absent);
// ApiVersions reports them with the ranges below, which say what this
// binary implements. A level is listed here only if its semantics are
// built, so no UpdateFeatures can finalize a level Vltava would not honour.

import (
	"maps"
	"slices"
)

// FeatureRange is the levels of a feature this binary supports.
type FeatureRange struct {
	Min, Max int16
}

// Feature names as Kafka spells them.
const (
	FeatureMetadataVersion    = "metadata.version"
	FeatureKRaftVersion       = "kraft.version"
	FeatureGroupVersion       = "group.version"
	FeatureTransactionVersion = "transaction.version"
)

// MetadataVersion40IV0 is Kafka's metadata.version level for 4.0-IV0, the
// one Vltava implements: the KRaft metadata of Kafka 3.9 (KIP-631 brokers,
// topic ids, KIP-455 reassignments, KIP-730 producer-id blocks) plus what
// group.version 1 (KIP-848 consumer groups, GA in 4.0) needs, and none of
// the later 4.0 levels' additions (eligible leader replicas, KIP-966).
const MetadataVersion40IV0 int16 = 22

// supportedFeatures are the features this binary implements:
//
//   - metadata.version: one level; the metadata records are Vltava's own and
//     do not change with the level, so no other level would be honoured.
//   - kraft.version: 0, a static voter set (controller.quorum.voters), or
//     1, a dynamic quorum (KIP-853, controller.quorum.bootstrap.servers).
//     It is the quorum's, set by how the nodes were configured and
//     formatted, never by UpdateFeatures (a static quorum cannot become a
//     dynamic one here); ApiVersions reports it from the node's quorum.
//   - group.version: 1 only; the KIP-848 consumer protocol is always served,
//     so level 0 (classic groups only) would not be honoured.
//   - transaction.version: 0-2. 1 (KIP-890 part 1) has partition leaders
//     verify a transaction with the coordinator before a transactional
//     append; 2 (part 2) bumps the producer epoch at every EndTxn (v5) and
//     lets clients skip AddPartitionsToTxn (Produce v12). Clients pick the
//     protocol from the finalized level (franz-go uses part 2 only at 2),
//     and the coordinator serves both by request version, so every level
//     is honoured. New clusters start at 2, Kafka 4.0's default.
var supportedFeatures = map[string]FeatureRange{
	FeatureMetadataVersion:    {MetadataVersion40IV0, MetadataVersion40IV0},
	FeatureKRaftVersion:       {0, 1},
	FeatureGroupVersion:       {1, 1},
	FeatureTransactionVersion: {0, 2},
}

// bootstrapLevels are the levels a new cluster starts at where that is not
// the lowest supported one above 0 (Kafka 4.0's defaults for its release
// version: transaction.version 2).
var bootstrapLevels = map[string]int16{
	FeatureTransactionVersion: 2,
}

// BootstrapLevel is the level a new cluster finalizes name at, if it is
// not the feature's lowest supported level.
func BootstrapLevel(name string) (int16, bool) {
	l, ok := bootstrapLevels[name]
	return l, ok
}

// SupportedFeatures returns the supported features, sorted by name.
func SupportedFeatures() []SupportedFeature {
	out := make([]SupportedFeature, 0, len(supportedFeatures))
	for name, r := range supportedFeatures {
		out = append(out, SupportedFeature{Name: name, FeatureRange: r})
	}
	slices.SortFunc(out, func(a, b SupportedFeature) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// SupportedFeature is one entry of SupportedFeatures.
type SupportedFeature struct {
	Name string
	FeatureRange
}

// SupportedFeatureRanges returns a copy of the supported features by name,
// for the controller's validation of UpdateFeatures.
func SupportedFeatureRanges() map[string]FeatureRange { return maps.Clone(supportedFeatures) }
