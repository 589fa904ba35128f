package metadata

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// FuzzDecodeBatch feeds arbitrary bytes to the metadata batch decoder, as a
// damaged log or snapshot would: decoding never panics and fails only with
// CORRUPT_MESSAGE; what decodes re-encodes to bytes that decode and encode
// to the same bytes again (the encoding is stable, though JSON may spell an
// empty list as null); and applying the records to an empty image (then to the image it
// produced) either succeeds or fails with INVALID_REQUEST, never panics.
// The seed corpus is in testdata/fuzz/FuzzDecodeBatch.
func FuzzDecodeBatch(f *testing.F) {
	if b, err := EncodeBatch(0, allRecordKinds()); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		offset, recs, err := DecodeBatch(data)
		if err != nil {
			if !errors.Is(err, kerr.CorruptMessage) {
				t.Fatalf("decode error without CORRUPT_MESSAGE: %v", err)
			}
			return
		}
		again, err := EncodeBatch(offset, recs)
		if err != nil {
			t.Fatalf("decoded records do not encode: %v", err)
		}
		offset2, recs2, err := DecodeBatch(again)
		if err != nil || offset2 != offset || len(recs2) != len(recs) {
			t.Fatalf("re-encoded batch does not decode the same: %v", err)
		}
		if third, err := EncodeBatch(offset2, recs2); err != nil || !bytes.Equal(third, again) {
			t.Fatalf("encoding is not stable: %v\n%s\n%s", err, again, third)
		}
		img := EmptyImage()
		for _, off := range []int64{max(offset, 0), max(offset, 0) + 1} {
			next, err := img.Apply(off, recs)
			if err != nil {
				if !errors.Is(err, kerr.InvalidRequest) {
					t.Fatalf("apply error without INVALID_REQUEST: %v", err)
				}
				return
			}
			img = next
		}
	})
}

// FuzzDecodeRecord does the same for one record envelope.
func FuzzDecodeRecord(f *testing.F) {
	for _, r := range allRecordKinds() {
		if b, err := EncodeRecord(r); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeRecord(data)
		if err != nil {
			if !errors.Is(err, kerr.CorruptMessage) {
				t.Fatalf("decode error without CORRUPT_MESSAGE: %v", err)
			}
			return
		}
		b, err := EncodeRecord(r)
		if err != nil {
			t.Fatalf("decoded record does not encode: %v", err)
		}
		r2, err := DecodeRecord(b)
		if err != nil || r2.Type() != r.Type() {
			t.Fatalf("re-encoded record does not decode the same: %v", err)
		}
		if b2, err := EncodeRecord(r2); err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable: %v", err)
		}
		if _, err := EmptyImage().Apply(0, []Record{r}); err != nil && !errors.Is(err, kerr.InvalidRequest) {
			t.Fatalf("apply error without INVALID_REQUEST: %v", err)
		}
	})
}
