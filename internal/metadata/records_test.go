package metadata

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func allRecordKinds() []Record {
	id := NewUuid()
	leader := int32(2)
	return []Record{
		&TopicRecord{Name: "orders", TopicID: id},
		&PartitionRecord{TopicID: id, Partition: 3, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 7},
		&PartitionChangeRecord{TopicID: id, Partition: 3, Leader: &leader, ISR: []int32{2}},
		&PartitionChangeRecord{TopicID: id, Partition: 0},
		&RemoveTopicRecord{TopicID: id},
		&ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "orders", Name: "retention.ms", Value: StringPtr("1000")},
		&ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "", Name: "log.retention.ms", Value: nil},
		&ProducerIDsRecord{BrokerID: 1, BrokerEpoch: 12, NextProducerID: 2000},
		&RegisterBrokerRecord{BrokerID: 1, IncarnationID: NewUuid(), BrokerEpoch: 5,
			Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "h", Port: 9092, SecurityProtocol: 0}}, Rack: "r1", Fenced: true},
		&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 21},
		&AccessControlEntryRecord{ID: NewUuid(), ResourceType: 2, ResourceName: "orders", PatternType: 3, Principal: "User:a", Host: "*", Operation: 3, PermissionType: 3},
		&RemoveAccessControlEntryRecord{ID: id},
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range allRecordKinds() {
		t.Run(r.Type().String(), func(t *testing.T) {
			b, err := EncodeRecord(r)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeRecord(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, r) {
				t.Fatalf("round trip:\n got %#v\nwant %#v", got, r)
			}
		})
	}
}

func TestBatchRoundTrip(t *testing.T) {
	recs := allRecordKinds()
	b, err := EncodeBatch(41, recs)
	if err != nil {
		t.Fatal(err)
	}
	off, got, err := DecodeBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	if off != 41 || !reflect.DeepEqual(got, recs) {
		t.Fatalf("got offset %d records %#v", off, got)
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"not json", `{`},
		{"unknown type", `{"type":99,"version":0,"data":{}}`},
		{"newer version", `{"type":2,"version":1,"data":{"name":"a"}}`},
		{"bad uuid", `{"type":2,"version":0,"data":{"name":"a","topic_id":"xyz"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRecord([]byte(tc.in))
			if !errors.Is(err, kerr.CorruptMessage) {
				t.Fatalf("got %v, want CORRUPT_MESSAGE", err)
			}
		})
	}
}

func TestUuid(t *testing.T) {
	seen := map[Uuid]bool{}
	for range 1000 {
		u := NewUuid()
		s := u.String()
		if len(s) != 22 || strings.HasPrefix(s, "-") || u.IsReserved() {
			t.Fatalf("bad uuid %q", s)
		}
		if u[6]>>4 != 4 || u[8]>>6 != 2 {
			t.Fatalf("uuid %x is not version 4", u[:])
		}
		p, err := ParseUuid(s)
		if err != nil || p != u {
			t.Fatalf("parse %q: %v %v", s, p, err)
		}
		if seen[u] {
			t.Fatalf("duplicate uuid %v", u)
		}
		seen[u] = true
	}
	// Kafka prints Uuid(0, 1) as AAAAAAAAAAAAAAAAAAAAAQ.
	if got := MetadataTopicUuid.String(); got != "AAAAAAAAAAAAAAAAAAAAAQ" {
		t.Fatalf("metadata topic id prints as %q", got)
	}
	for _, bad := range []string{"", "short", "AAAAAAAAAAAAAAAAAAAAA*"} {
		if _, err := ParseUuid(bad); err == nil {
			t.Errorf("ParseUuid(%q) succeeded", bad)
		}
	}
}
