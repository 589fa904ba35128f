package record

import (
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// fuzzOptions derives validation options from one fuzzed byte so that the
// fuzzer explores compaction, recompression and timestamp rules too.
func fuzzOptions(mode uint8) ValidateOptions {
	o := permissive()
	o.Compacted = mode&1 != 0
	o.KeepProducerCodec = mode&2 != 0
	o.TargetCodec = Codec((mode >> 2) % 5)
	if mode&0x20 != 0 {
		o.TimestampBeforeMaxMs, o.TimestampAfterMaxMs = 3_600_000, 3_600_000
	}
	if mode&0x40 != 0 {
		o.TimestampType = LogAppendTime
	}
	if mode&0x80 != 0 {
		o.MaxMessageBytes = 512
	}
	return o
}

func FuzzValidateProduce(f *testing.F) {
	f.Add(franzBatch(f, 3, nil), uint8(0))
	for i, c := range allCodecs {
		f.Add(mustBuild(f, sampleHeader(4), sampleRecords(4, 40), c), uint8(i<<2|3))
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		opts := fuzzOptions(mode)
		v, err := ValidateProduce(data, opts)
		if err != nil {
			var kErr *kerr.Error
			if !errors.As(err, &kErr) {
				t.Fatalf("error %v does not wrap a Kafka error code", err)
			}
			return
		}
		h, perr := ParseHeader(v.Batch)
		if perr != nil || h != v.Header {
			t.Fatalf("returned header %+v does not match the batch bytes (%+v, %v)", v.Header, h, perr)
		}
		if h.TotalSize() != len(v.Batch) || h.Magic != 2 || h.BaseOffset != 0 {
			t.Fatalf("inconsistent accepted batch: %+v, %d bytes", h, len(v.Batch))
		}
		if ComputeCRC(v.Batch) != h.CRC {
			t.Fatal("accepted batch fails its CRC")
		}
		if h.NumRecords < 1 || int64(h.LastOffsetDelta)+1 != int64(h.NumRecords) || h.IsControl() {
			t.Fatalf("accepted batch with bad count/range/control: %+v", h)
		}
		if !opts.KeepProducerCodec && h.Codec() != opts.TargetCodec {
			t.Fatalf("codec %s, topic wants %s", h.Codec(), opts.TargetCodec)
		}
		if opts.MaxMessageBytes > 0 && len(v.Batch) > opts.MaxMessageBytes {
			t.Fatalf("accepted %d bytes over max.message.bytes %d", len(v.Batch), opts.MaxMessageBytes)
		}
		_, recs, derr := DecodeRecords(v.Batch)
		if derr != nil || len(recs) != int(h.NumRecords) {
			t.Fatalf("accepted batch does not decode: %v", derr)
		}
		for i := range recs {
			if opts.Compacted && recs[i].Key == nil {
				t.Fatalf("record %d has a null key on a compacted topic", i)
			}
		}
	})
}

func FuzzDecodeRecords(f *testing.F) {
	f.Add(franzBatch(f, 2, nil))
	for _, c := range allCodecs {
		f.Add(mustBuild(f, sampleHeader(3), sampleRecords(3, 30), c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, recs, err := DecodeRecords(data)
		if err != nil {
			return
		}
		if len(recs) != int(h.NumRecords) || h.TotalSize() > len(data) {
			t.Fatalf("decoded %d records for count %d", len(recs), h.NumRecords)
		}
		// Whatever decodes must re-encode to a batch with the same records.
		b, err := BuildBatch(h, recs, h.Codec())
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		h2, recs2, err := DecodeRecords(b)
		if err != nil {
			t.Fatalf("re-encoded batch does not decode: %v", err)
		}
		if h2.NumRecords != h.NumRecords || h2.CRC != ComputeCRC(b) {
			t.Fatalf("re-encoded header %+v", h2)
		}
		if len(recs) > 0 && !reflect.DeepEqual(recs, recs2) {
			t.Fatal("records changed across re-encoding")
		}
	})
}

// FuzzParseMarker decodes transaction markers: any input is a marker of a
// control batch or an error, never a crash; a marker built by
// BuildMarkerBatch parses back to itself.
func FuzzParseMarker(f *testing.F) {
	b, _ := BuildMarkerBatch(7, 1, Marker{Type: ControlCommit, CoordinatorEpoch: 3}, 1000)
	f.Add(b, int16(1), int32(3))
	f.Fuzz(func(t *testing.T, data []byte, typ int16, coordinatorEpoch int32) {
		_, _ = ParseMarker(data)
		m := Marker{Type: ControlType(typ), CoordinatorEpoch: coordinatorEpoch}
		built, err := BuildMarkerBatch(1, 0, m, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := ParseMarker(built); err != nil || got != m {
			t.Fatalf("marker %+v parsed back as %+v, %v", m, got, err)
		}
	})
}
