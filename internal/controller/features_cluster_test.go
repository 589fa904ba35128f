package controller_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFeaturesAcrossTheCluster: the active controller finalizes the
// bootstrap feature levels and every node reports them in ApiVersions;
// UpdateFeatures through a node that is not the controller is answered
// with the controller's validation.
func TestFeaturesAcrossTheCluster(t *testing.T) {
	c := startCluster(t, 3, nil)
	c.awaitConverged()
	for id := range c.nodes {
		eventually(t, 10*time.Second, "finalized metadata.version on every node", func() bool {
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version = 3
			req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
			resp := c.request(id, req).(*kmsg.ApiVersionsResponse)
			for _, f := range resp.FinalizedFeatures {
				if f.Name == "metadata.version" && f.MaxVersionLevel == 22 {
					return true
				}
			}
			return false
		})
	}
	from := c.other()
	for _, tt := range []struct {
		feature string
		level   int16
		want    int16
	}{
		{"metadata.version", 22, 0},
		{"transaction.version", 3, kerr.InvalidUpdateVersion.Code},
	} {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version = 1
		fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = tt.feature, tt.level, 1
		req.FeatureUpdates = append(req.FeatureUpdates, fu)
		resp := c.request(from, req).(*kmsg.UpdateFeaturesResponse)
		if resp.ErrorCode != tt.want {
			t.Errorf("%s %d via node %d: error %d (%v), want %d", tt.feature, tt.level, from, resp.ErrorCode, resp.ErrorMessage, tt.want)
		}
	}
}
