package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func apiVersions(c *conn, v int16) *kmsg.ApiVersionsResponse {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "broker-test", "1.0"
	return do[*kmsg.ApiVersionsResponse](c, v, req)
}

// TestApiVersionsFeatures: v3+ lists the supported features (those whose
// range starts at 0 only from v4, KAFKA-17492) and the finalized levels
// bootstrapped by the controller (KIP-584).
func TestApiVersionsFeatures(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	within(t, 10*time.Second, "finalized features", func() bool {
		return len(apiVersions(c, 3).FinalizedFeatures) == 3
	})
	v3 := apiVersions(c, 3)
	supported := map[string][2]int16{}
	for _, f := range v3.SupportedFeatures {
		supported[f.Name] = [2]int16{f.MinVersion, f.MaxVersion}
	}
	if supported["metadata.version"] != [2]int16{22, 22} || supported["group.version"] != [2]int16{1, 1} || len(supported) != 2 {
		t.Errorf("v3 supported features %v, want metadata.version 22-22 and group.version 1-1 only", supported)
	}
	finalized := map[string]int16{}
	for _, f := range v3.FinalizedFeatures {
		finalized[f.Name] = f.MaxVersionLevel
		if f.MinVersionLevel != f.MaxVersionLevel {
			t.Errorf("%s finalized %d-%d", f.Name, f.MinVersionLevel, f.MaxVersionLevel)
		}
	}
	if finalized["metadata.version"] != 22 || finalized["group.version"] != 1 || finalized["transaction.version"] != 2 {
		t.Errorf("finalized %v", finalized)
	}
	if v3.FinalizedFeaturesEpoch < 0 {
		t.Errorf("finalized features epoch %d", v3.FinalizedFeaturesEpoch)
	}
	v4 := apiVersions(c, 4)
	names := map[string]bool{}
	for _, f := range v4.SupportedFeatures {
		names[f.Name] = true
	}
	if !names["kraft.version"] || !names["transaction.version"] || len(names) != 4 {
		t.Errorf("v4 supported features %v, want all four", names)
	}
	if v2 := apiVersions(c, 2); len(v2.SupportedFeatures) != 0 || len(v2.FinalizedFeatures) != 0 {
		t.Error("v2 carries features")
	}
}

func TestUpdateFeatures(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	within(t, 10*time.Second, "finalized features", func() bool {
		return len(apiVersions(c, 3).FinalizedFeatures) == 3
	})
	update := func(v int16, feature string, level int16, typ int8, allowDowngrade bool) *kmsg.UpdateFeaturesResponse {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		fu.Feature, fu.MaxVersionLevel, fu.UpgradeType, fu.AllowDowngrade = feature, level, typ, allowDowngrade
		req.FeatureUpdates = append(req.FeatureUpdates, fu)
		return do[*kmsg.UpdateFeaturesResponse](c, v, req)
	}
	for _, tt := range []struct {
		name           string
		v              int16
		feature        string
		level          int16
		typ            int8
		allowDowngrade bool
		want           int16
	}{
		{"metadata.version at its level", 1, "metadata.version", 22, 1, false, 0},
		{"metadata.version to 3.9-IV0", 1, "metadata.version", 21, 2, false, kerr.InvalidUpdateVersion.Code},
		{"metadata.version disabled", 1, "metadata.version", 0, 3, false, kerr.InvalidUpdateVersion.Code},
		{"group.version 0: classic only is not honoured", 1, "group.version", 0, 2, false, kerr.InvalidUpdateVersion.Code},
		{"transaction.version 3 is not built", 1, "transaction.version", 3, 1, false, kerr.InvalidUpdateVersion.Code},
		{"transaction.version 1: KIP-890 part 1 only", 1, "transaction.version", 1, 2, false, 0},
		{"transaction.version back to 2", 1, "transaction.version", 2, 1, false, 0},
		{"kraft.version is the quorum's", 2, "kraft.version", 1, 1, false, kerr.InvalidUpdateVersion.Code},
		{"unknown feature", 1, "eligible.leader.replicas.version", 1, 1, false, kerr.InvalidUpdateVersion.Code},
		{"unknown upgrade type", 1, "group.version", 1, 0, false, kerr.InvalidUpdateVersion.Code},
		{"v0 downgrade without allow_downgrade", 0, "group.version", 0, 0, false, kerr.InvalidUpdateVersion.Code},
		{"v0 group.version at its level", 0, "group.version", 1, 0, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := update(tt.v, tt.feature, tt.level, tt.typ, tt.allowDowngrade)
			if resp.ErrorCode != tt.want {
				t.Fatalf("error %d (%v), want %d", resp.ErrorCode, resp.ErrorMessage, tt.want)
			}
			if tt.v <= 1 && (len(resp.Results) != 1 || resp.Results[0].Feature != tt.feature || resp.Results[0].ErrorCode != tt.want) {
				t.Errorf("results %+v", resp.Results)
			}
		})
	}
	f := apiVersions(c, 3).FinalizedFeatures
	if len(f) != 3 {
		t.Errorf("finalized features changed: %+v", f)
	}
}
