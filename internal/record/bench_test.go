package record

import (
	"bytes"
	"testing"
)

// BenchmarkValidateProduce measures the produce hot path for a typical
// client batch: 16 records of 1 KiB, accepted in place.
func BenchmarkValidateProduce(b *testing.B) {
	for _, c := range []Codec{CodecNone, CodecLZ4, CodecZstd} {
		b.Run(c.String(), func(b *testing.B) {
			recs := sampleRecords(16, 1024)
			data := mustBuild(b, sampleHeader(16), recs, c)
			opts := permissive()
			opts.TimestampAfterMaxMs = 3_600_000 // Kafka 4 default: records are walked
			b.ReportAllocs()
			b.SetBytes(int64(16 * 1024))
			for b.Loop() {
				if _, err := ValidateProduce(data, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("lz4-to-zstd", func(b *testing.B) {
		data := mustBuild(b, sampleHeader(16), sampleRecords(16, 1024), CodecLZ4)
		opts := permissive()
		opts.KeepProducerCodec, opts.TargetCodec = false, CodecZstd
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ValidateProduce(bytes.Clone(data), opts); err != nil {
				b.Fatal(err)
			}
		}
	})
}
