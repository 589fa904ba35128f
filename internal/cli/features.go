package cli

// vltava features: kafka-features.sh (KIP-584). describe reads the
// supported and finalized levels from ApiVersions; upgrade, downgrade and
// disable send UpdateFeatures (KIP-778 upgrade types) to the controller.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metadataVersionLevels are Kafka's metadata.version names and levels
// (MetadataVersion) from 3.3-IV3, Kafka 4's oldest, that --metadata accepts
// by name; a release ("4.0") stands for its last level, as
// kafka-features.sh reads it. Any level may also be given as a number.
var metadataVersionLevels = map[string]int16{
	"3.3-IV3": 7, "3.3": 7,
	"3.4-IV0": 8, "3.4": 8,
	"3.5-IV0": 9, "3.5-IV1": 10, "3.5-IV2": 11, "3.5": 11,
	"3.6-IV0": 12, "3.6-IV1": 13, "3.6-IV2": 14, "3.6": 14,
	"3.7-IV0": 15, "3.7-IV1": 16, "3.7-IV2": 17, "3.7-IV3": 18, "3.7-IV4": 19, "3.7": 19,
	"3.8-IV0": 20, "3.8": 20,
	"3.9-IV0": 21, "3.9": 21,
	"4.0-IV0": 22, "4.0-IV1": 23, "4.0-IV2": 24, "4.0-IV3": 25, "4.0": 25,
	"4.1-IV0": 26, "4.1-IV1": 27, "4.1": 27,
	"4.2-IV0": 28, "4.2-IV1": 29, "4.2": 29,
}

// metadataVersionName is the IV name of a metadata.version level, or the
// number when it has none here.
func metadataVersionName(level int16) string {
	for name, l := range metadataVersionLevels {
		if l == level && strings.Contains(name, "-IV") {
			return name
		}
	}
	return strconv.Itoa(int(level))
}

func newFeaturesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "features",
		Short: "Describe and change the cluster's feature levels (kafka-features.sh)",
		Example: `  vltava features describe
  vltava features upgrade --metadata 4.0-IV0
  vltava features downgrade --feature group.version=1 --dry-run
  vltava features disable --feature transaction.version`,
	}
	cmd.AddCommand(newFeaturesDescribeCommand(),
		newFeaturesUpdateCommand("upgrade", "Raise feature levels"),
		newFeaturesUpdateCommand("downgrade", "Lower feature levels (--unsafe for lossy downgrades)"),
		newFeaturesUpdateCommand("disable", "Disable features (level 0)"))
	return cmd
}

// featureDescription is one feature as describe prints it.
type featureDescription struct {
	Feature      string `json:"feature"`
	SupportedMin int16  `json:"supported_min_version"`
	SupportedMax int16  `json:"supported_max_version"`
	Finalized    int16  `json:"finalized_version_level"`
	Epoch        int64  `json:"epoch"`
}

func newFeaturesDescribeCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "describe",
		Short:   "Show each feature's supported range and finalized level",
		Example: `  vltava features describe --output json`,
		Args:    cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error {
			cl, _, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			features, err := describeFeatures(in.ctx, cl)
			if err != nil {
				return err
			}
			if in.json {
				return writeJSON(in.stdout, features)
			}
			t := newTable(in.stdout, "FEATURE", "SUPPORTED-MIN", "SUPPORTED-MAX", "FINALIZED", "EPOCH")
			for _, f := range features {
				level := func(l int16) string {
					if f.Feature == "metadata.version" && l > 0 {
						return metadataVersionName(l)
					}
					return strconv.Itoa(int(l))
				}
				t.row(f.Feature, level(f.SupportedMin), level(f.SupportedMax), level(f.Finalized), f.Epoch)
			}
			return t.flush()
		}),
	}
}

// describeFeatures asks a broker's ApiVersions (v4, so features whose
// range starts at 0 are listed) for the supported and finalized levels.
func describeFeatures(ctx context.Context, cl *kgo.Client) ([]featureDescription, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 4
	req.ClientSoftwareName, req.ClientSoftwareVersion = "vltava", "1"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("describing features: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("describing features: %w", err)
	}
	byName := map[string]*featureDescription{}
	get := func(name string) *featureDescription {
		if byName[name] == nil {
			byName[name] = &featureDescription{Feature: name, Epoch: resp.FinalizedFeaturesEpoch}
		}
		return byName[name]
	}
	for _, f := range resp.SupportedFeatures {
		d := get(f.Name)
		d.SupportedMin, d.SupportedMax = f.MinVersion, f.MaxVersion
	}
	for _, f := range resp.FinalizedFeatures {
		get(f.Name).Finalized = f.MaxVersionLevel
	}
	out := make([]featureDescription, 0, len(byName))
	for _, d := range byName {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b featureDescription) int { return strings.Compare(a.Feature, b.Feature) })
	return out, nil
}

// Kafka's UpdateFeatures upgrade types (KIP-778).
const (
	upgradeTypeUpgrade         = 1
	upgradeTypeSafeDowngrade   = 2
	upgradeTypeUnsafeDowngrade = 3
)

// newFeaturesUpdateCommand builds upgrade, downgrade or disable.
func newFeaturesUpdateCommand(verb, short string) *cobra.Command {
	var metadata string
	var features []string
	var unsafe, dryRun bool
	cmd := &cobra.Command{
		Use:   verb,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error {
			updates, err := featureUpdates(verb, metadata, features, unsafe)
			if err != nil {
				return err
			}
			cl, _, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			req := kmsg.NewPtrUpdateFeaturesRequest()
			req.Version = 1
			req.TimeoutMillis = int32(in.props.requestTimeout.Milliseconds())
			req.ValidateOnly = dryRun
			req.FeatureUpdates = updates
			resp, err := req.RequestWith(in.ctx, cl)
			if err != nil {
				return fmt.Errorf("updating features: %w", err)
			}
			if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
				return fmt.Errorf("updating features: %w%s", err, ptrDetail(resp.ErrorMessage))
			}
			for _, r := range resp.Results {
				if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
					return fmt.Errorf("updating %s: %w%s", r.Feature, err, ptrDetail(r.ErrorMessage))
				}
			}
			for _, u := range updates {
				what := fmt.Sprintf("%s was %s to %d", u.Feature, pastTense(verb), u.MaxVersionLevel)
				if dryRun {
					what = fmt.Sprintf("%s can be %s to %d", u.Feature, pastTense(verb), u.MaxVersionLevel)
				}
				fmt.Fprintln(in.stdout, what)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	if verb != "disable" {
		f.StringVar(&metadata, "metadata", "", "metadata.version level, by name (4.0-IV0) or number")
		f.StringArrayVar(&features, "feature", nil, "feature=level to set (repeatable)")
	} else {
		f.StringArrayVar(&features, "feature", nil, "feature to disable (repeatable)")
	}
	if verb != "upgrade" {
		f.BoolVar(&unsafe, "unsafe", false, "allow a lossy (unsafe) downgrade")
	}
	f.BoolVar(&dryRun, "dry-run", false, "validate the change without applying it")
	return cmd
}

func pastTense(verb string) string {
	switch verb {
	case "upgrade":
		return "upgraded"
	case "downgrade":
		return "downgraded"
	}
	return "disabled"
}

// ptrDetail is detail for a nullable message.
func ptrDetail(msg *string) string {
	if msg == nil {
		return ""
	}
	return detail(*msg)
}

// featureUpdates turns the flags into UpdateFeatures entries.
func featureUpdates(verb, metadata string, features []string, unsafe bool) ([]kmsg.UpdateFeaturesRequestFeatureUpdate, error) {
	typ := int8(upgradeTypeUpgrade)
	if verb != "upgrade" {
		typ = upgradeTypeSafeDowngrade
		if unsafe {
			typ = upgradeTypeUnsafeDowngrade
		}
	}
	var out []kmsg.UpdateFeaturesRequestFeatureUpdate
	add := func(name string, level int16) {
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, typ
		out = append(out, u)
	}
	if metadata != "" {
		level, ok := metadataVersionLevels[metadata]
		if !ok {
			n, err := strconv.ParseInt(metadata, 10, 16)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("--metadata %q: want a metadata.version name (4.0-IV0) or a level >= 1", metadata)
			}
			level = int16(n)
		}
		add("metadata.version", level)
	}
	for _, f := range features {
		if verb == "disable" {
			if strings.TrimSpace(f) == "" || strings.Contains(f, "=") {
				return nil, fmt.Errorf("--feature %q: want a feature name", f)
			}
			add(strings.TrimSpace(f), 0)
			continue
		}
		name, lv, ok := strings.Cut(f, "=")
		n, err := strconv.ParseInt(strings.TrimSpace(lv), 10, 16)
		if !ok || strings.TrimSpace(name) == "" || err != nil || n < 0 {
			return nil, fmt.Errorf("--feature %q: want feature=level", f)
		}
		add(strings.TrimSpace(name), int16(n))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("nothing to %s: give --feature%s", verb, map[bool]string{true: "", false: " or --metadata"}[verb == "disable"])
	}
	return out, nil
}
