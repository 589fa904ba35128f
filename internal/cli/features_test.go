package cli

import "testing"

func TestFeatureUpdates(t *testing.T) {
	for _, tt := range []struct {
		verb     string
		metadata string
		features []string
		unsafe   bool
		want     map[string]int16
		typ      int8
		err      bool
	}{
		{"upgrade", "4.0-IV0", []string{"group.version=1"}, false, map[string]int16{"metadata.version": 22, "group.version": 1}, upgradeTypeUpgrade, false},
		{"upgrade", "3.9", nil, false, map[string]int16{"metadata.version": 21}, upgradeTypeUpgrade, false},
		{"upgrade", "23", nil, false, map[string]int16{"metadata.version": 23}, upgradeTypeUpgrade, false},
		{"downgrade", "", []string{"transaction.version=0"}, false, map[string]int16{"transaction.version": 0}, upgradeTypeSafeDowngrade, false},
		{"downgrade", "", []string{"group.version=0"}, true, map[string]int16{"group.version": 0}, upgradeTypeUnsafeDowngrade, false},
		{"disable", "", []string{"transaction.version"}, false, map[string]int16{"transaction.version": 0}, upgradeTypeSafeDowngrade, false},
		{"upgrade", "4.9-IV9", nil, false, nil, 0, true},
		{"upgrade", "", []string{"group.version"}, false, nil, 0, true},
		{"disable", "", []string{"group.version=1"}, false, nil, 0, true},
		{"upgrade", "", nil, false, nil, 0, true},
	} {
		got, err := featureUpdates(tt.verb, tt.metadata, tt.features, tt.unsafe)
		if tt.err {
			if err == nil {
				t.Errorf("%s %q %v: no error", tt.verb, tt.metadata, tt.features)
			}
			continue
		}
		if err != nil || len(got) != len(tt.want) {
			t.Fatalf("%s %q %v: %v %v", tt.verb, tt.metadata, tt.features, got, err)
		}
		for _, u := range got {
			if l, ok := tt.want[u.Feature]; !ok || l != u.MaxVersionLevel || u.UpgradeType != tt.typ {
				t.Errorf("%s: update %s=%d type %d, want %v type %d", tt.verb, u.Feature, u.MaxVersionLevel, u.UpgradeType, tt.want, tt.typ)
			}
		}
	}
	if n := metadataVersionName(22); n != "4.0-IV0" {
		t.Errorf("level 22 named %s", n)
	}
	if n := metadataVersionName(99); n != "99" {
		t.Errorf("level 99 named %s", n)
	}
}
