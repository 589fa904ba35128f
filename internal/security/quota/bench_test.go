package quota

import (
	"testing"

	"github.com/vltava/vltava/internal/metadata"
)

// BenchmarkHotPathNoQuota is what every produce and fetch pays when no
// client has a quota of that kind: a sync with an unchanged image and the
// enabled check (docs/PERFORMANCE.md).
func BenchmarkHotPathNoQuota(b *testing.B) {
	m := NewManager(Config{Window: DefaultWindow, ControllerWindow: DefaultWindow})
	img, _ := metadata.EmptyImage().Apply(0, []metadata.Record{&metadata.ClientQuotaRecord{
		Entity: metadata.QuotaEntity{User: metadata.QuotaName("other")}.Data(), Key: ConsumerByteRate, Value: 1,
	}})
	q := img.ClientQuotas()
	b.ReportAllocs()
	for b.Loop() {
		if m.Sync(q).Enabled(Produce) {
			b.Fatal("enabled")
		}
	}
}

// BenchmarkRecordWithQuota is a produce counted against a quota: the
// eight-level lookup, the sensor and the rate.
func BenchmarkRecordWithQuota(b *testing.B) {
	m := NewManager(Config{Window: DefaultWindow, ControllerWindow: DefaultWindow})
	img, _ := metadata.EmptyImage().Apply(0, []metadata.Record{&metadata.ClientQuotaRecord{
		Entity: metadata.QuotaEntity{ClientID: metadata.QuotaDefault}.Data(), Key: ProducerByteRate, Value: 1 << 40,
	}})
	m.Sync(img.ClientQuotas())
	b.ReportAllocs()
	for b.Loop() {
		m.Record(Produce, "ANONYMOUS", "producer-1", 1024)
	}
}
