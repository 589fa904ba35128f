package group

import (
	"reflect"
	"testing"
)

// A classic member of a consumer group shows its ClassicMemberMetadata.
func TestDecodeOffsetsRecordClassicMember(t *testing.T) {
	r := memberMetadataRecord("g", "m1", memberMetadata{topics: []string{"a"},
		classic: &classicMetadata{sessionTimeoutMs: 10000, protocols: []Protocol{{Name: "range", Metadata: []byte{0, 3}}}}})
	rec, ok, err := DecodeOffsetsRecord(r.key, r.value)
	if err != nil || !ok {
		t.Fatalf("decode: ok %v, err %v", ok, err)
	}
	want := map[string]any{"session_timeout_ms": int32(10000),
		"supported_protocols": []map[string]any{{"name": "range", "metadata": "AAM="}}}
	if got := rec.Payload["classic_member_metadata"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("classic_member_metadata = %#v, want %#v", got, want)
	}
}
