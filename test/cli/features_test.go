package cli_test

import (
	"strings"
	"testing"
	"time"
)

type featureRow struct {
	Feature      string `json:"feature"`
	SupportedMin int16  `json:"supported_min_version"`
	SupportedMax int16  `json:"supported_max_version"`
	Finalized    int16  `json:"finalized_version_level"`
}

// TestFeatures: vltava features (kafka-features.sh) describes the levels
// from ApiVersions and sends UpdateFeatures, whose refusals it reports.
func TestFeatures(t *testing.T) {
	b := startVltava(t)
	got := map[string]featureRow{}
	// The controller finalizes the bootstrap levels just after start: poll
	// for them, with a deadline.
	for deadline := time.Now().Add(10 * time.Second); got["metadata.version"].Finalized == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, r := range decode[[]featureRow](t, ok(t, b, "", "features", "describe", "--output", "json")) {
			got[r.Feature] = r
		}
	}
	if r := got["metadata.version"]; r.SupportedMin != 22 || r.SupportedMax != 22 || r.Finalized != 22 {
		t.Errorf("metadata.version %+v", r)
	}
	if r := got["transaction.version"]; r.SupportedMax != 2 || r.Finalized != 2 {
		t.Errorf("transaction.version %+v", r)
	}
	if out := ok(t, b, "", "features", "describe"); !strings.Contains(out, "4.0-IV0") {
		t.Errorf("table does not name metadata.version 4.0-IV0:\n%s", out)
	}
	if out := ok(t, b, "", "features", "upgrade", "--metadata", "4.0-IV0", "--dry-run"); !strings.Contains(out, "metadata.version can be upgraded to 22") {
		t.Errorf("dry run: %s", out)
	}
	if msg := fails(t, b, "", "features", "upgrade", "--feature", "transaction.version=3"); !strings.Contains(msg, "INVALID_UPDATE_VERSION") {
		t.Errorf("transaction.version 3: %s", msg)
	}
	if msg := fails(t, b, "", "features", "disable", "--feature", "metadata.version"); !strings.Contains(msg, "INVALID_UPDATE_VERSION") {
		t.Errorf("disabling metadata.version: %s", msg)
	}
	if msg := fails(t, b, "", "features", "downgrade"); !strings.Contains(msg, "nothing to downgrade") {
		t.Errorf("no flags: %s", msg)
	}
}
