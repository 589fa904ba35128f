package metadata

import (
	"reflect"
	"testing"
)

func TestACLRecordsApplyRemoveAndSnapshot(t *testing.T) {
	a := &AccessControlEntryRecord{ID: NewUuid(), ResourceType: 2, ResourceName: "orders", PatternType: 3,
		Principal: "User:alice", Host: "*", Operation: 3, PermissionType: 3}
	b := &AccessControlEntryRecord{ID: NewUuid(), ResourceType: 3, ResourceName: "app-", PatternType: 4,
		Principal: "User:*", Host: "10.0.0.1", Operation: 2, PermissionType: 2}
	for _, r := range []Record{a, &RemoveAccessControlEntryRecord{ID: a.ID}} {
		enc, err := EncodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeRecord(enc)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip of %v: %#v, %v", r.Type(), got, err)
		}
	}

	img, err := EmptyImage().Apply(0, []Record{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if img.ACLs().Len() != 2 || EmptyImage().ACLs().Len() != 0 {
		t.Fatalf("ACLs: %d", img.ACLs().Len())
	}
	if _, err := img.Apply(1, []Record{a}); err == nil {
		t.Fatal("a duplicate ACL id was applied")
	}
	if _, err := img.Apply(1, []Record{&RemoveAccessControlEntryRecord{ID: NewUuid()}}); err == nil {
		t.Fatal("removing an unknown ACL id was applied")
	}
	unrelated, err := img.Apply(1, []Record{&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 22}})
	if err != nil {
		t.Fatal(err)
	}
	if unrelated.ACLs() != img.ACLs() {
		t.Fatal("an image change without ACL records replaced the ACL set")
	}
	removed, err := img.Apply(2, []Record{&RemoveAccessControlEntryRecord{ID: a.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if removed.ACLs().Len() != 1 || img.ACLs().Len() != 2 {
		t.Fatalf("remove: new %d, old %d", removed.ACLs().Len(), img.ACLs().Len())
	}

	// A snapshot of the image rebuilds the same set.
	rebuilt, err := EmptyImage().Apply(5, img.Records())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rebuilt.ACLs().Sorted(), img.ACLs().Sorted()) {
		t.Fatalf("snapshot: %v, want %v", rebuilt.ACLs().Sorted(), img.ACLs().Sorted())
	}
}
