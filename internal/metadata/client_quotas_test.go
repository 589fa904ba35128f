package metadata

import (
	"reflect"
	"testing"
)

func quotaRecord(e QuotaEntity, key string, v float64) *ClientQuotaRecord {
	return &ClientQuotaRecord{Entity: e.Data(), Key: key, Value: v}
}

// TestClientQuotaRecords: records set and remove keys per entity, defaults
// are distinct from names, a removed last key removes the entity, and the
// snapshot records rebuild the same quotas.
func TestClientQuotaRecords(t *testing.T) {
	alice := QuotaEntity{User: QuotaName("alice")}
	aliceApp := QuotaEntity{User: QuotaName("alice"), ClientID: QuotaName("app")}
	defUser := QuotaEntity{User: QuotaDefault}
	ip := QuotaEntity{IP: QuotaName("10.0.0.1")}
	img := mustApply(t, EmptyImage(),
		quotaRecord(alice, "producer_byte_rate", 1024),
		quotaRecord(aliceApp, "consumer_byte_rate", 2048),
		quotaRecord(defUser, "request_percentage", 50),
		quotaRecord(ip, "connection_creation_rate", 5),
	)
	before := img.ClientQuotas()
	if got := before.Get(alice)["producer_byte_rate"]; got != 1024 {
		t.Fatalf("alice producer_byte_rate = %v", got)
	}
	if got := before.Get(QuotaEntity{User: QuotaName("<default>")}); got != nil {
		t.Fatalf("a user named <default> is not the default entity: %v", got)
	}
	img = mustApply(t, img, &ClientQuotaRecord{Entity: alice.Data(), Key: "producer_byte_rate", Remove: true})
	if img.ClientQuotas() == before {
		t.Fatal("a change must replace the quotas")
	}
	if img.ClientQuotas().Get(alice) != nil || img.ClientQuotas().Len() != 3 {
		t.Fatalf("removing the last key leaves the entity: %v", img.ClientQuotas().Get(alice))
	}
	if before.Get(alice) == nil {
		t.Fatal("the older image changed")
	}
	rebuilt, err := EmptyImage().Apply(img.Offset(), img.Records())
	if err != nil {
		t.Fatal(err)
	}
	assertImagesEqual(t, rebuilt, img)
	if !reflect.DeepEqual(rebuilt.ClientQuotas().entities, img.ClientQuotas().entities) {
		t.Fatal("snapshot did not rebuild the quotas")
	}
	if _, err := img.Apply(img.Offset()+1, []Record{&ClientQuotaRecord{Key: "x"}}); err == nil {
		t.Fatal("an empty entity was accepted")
	}
	b, _ := EncodeRecord(quotaRecord(defUser, "request_percentage", 12.5))
	r, err := DecodeRecord(b)
	if err != nil || !reflect.DeepEqual(r, quotaRecord(defUser, "request_percentage", 12.5)) {
		t.Fatalf("round trip: %#v %v", r, err)
	}
}
