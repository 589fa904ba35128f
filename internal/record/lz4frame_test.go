package record

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/pierrec/lz4/v4"
)

func lz4Frame(t testing.TB, data []byte, opts ...lz4.Option) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	if err := w.Apply(opts...); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The block-by-block decoder reads every frame shape lz4 writers produce
// (checksums on and off, content size, stored and compressed blocks, several
// blocks, several frames) exactly as lz4.Reader does.
func TestDecodeLZ4Frames(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 300<<10)
	for i := range random {
		random[i] = byte(rng.IntN(256)) // incompressible: stored blocks
	}
	text := bytes.Repeat([]byte("the same record value, again and again; "), 8000)
	cases := []struct {
		name string
		data []byte
		opts []lz4.Option
	}{
		{"empty", nil, nil},
		{"defaults (content checksum)", text, nil},
		{"no checksums, 64 KiB blocks (Kafka's writer)", text, []lz4.Option{lz4.ChecksumOption(false), lz4.BlockChecksumOption(false), lz4.BlockSizeOption(lz4.Block64Kb)}},
		{"block checksums", text, []lz4.Option{lz4.BlockChecksumOption(true)}},
		{"content size", text, []lz4.Option{lz4.SizeOption(uint64(len(text)))}},
		{"incompressible: stored blocks", random, []lz4.Option{lz4.BlockSizeOption(lz4.Block64Kb)}},
		{"4 MiB blocks", append(bytes.Clone(text), random...), []lz4.Option{lz4.BlockSizeOption(lz4.Block4Mb)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			frame := lz4Frame(t, tc.data, tc.opts...)
			got, err := decodeLZ4Frames([]byte("prefix"), frame)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, append([]byte("prefix"), tc.data...)) {
				t.Fatalf("decoded %d bytes, want %d", len(got)-6, len(tc.data))
			}
			two := append(bytes.Clone(frame), frame...)
			got, err = decodeLZ4Frames(nil, two)
			if err != nil || !bytes.Equal(got, append(bytes.Clone(tc.data), tc.data...)) {
				t.Fatalf("two frames: %v, %d bytes", err, len(got))
			}
		})
	}
}

func TestDecodeLZ4FramesRejectsDamage(t *testing.T) {
	frame := lz4Frame(t, bytes.Repeat([]byte("abc"), 50000))
	for cut := 1; cut < len(frame); cut += 7 {
		if _, err := decodeLZ4Frames(nil, frame[:cut]); err == nil {
			t.Fatalf("frame cut at %d of %d decoded without error", cut, len(frame))
		}
	}
	bad := bytes.Clone(frame)
	bad[0] ^= 1
	if _, err := decodeLZ4Frames(nil, bad); !errors.Is(err, errLZ4Frame) {
		t.Fatalf("bad magic: %v", err)
	}
	// Linked blocks are left to lz4.Reader.
	linked := bytes.Clone(frame)
	linked[4] &^= 0x20
	if _, err := decodeLZ4Frames(nil, linked); !errors.Is(err, errLinkedBlocks) {
		t.Fatalf("linked blocks: %v", err)
	}
}

func BenchmarkDecodeLZ4(b *testing.B) {
	raw := mustBuild(b, sampleHeader(16), sampleRecords(16, 1024), CodecNone)[BatchHeaderSize:]
	frame := lz4Frame(b, raw) // default writer: content checksum on, like franz-go's
	b.Run("frames", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		var dst []byte
		for b.Loop() {
			dst, _ = decodeLZ4Frames(dst[:0], frame)
		}
	})
	b.Run("reader", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		zr := lz4.NewReader(nil)
		var dst []byte
		for b.Loop() {
			zr.Reset(bytes.NewReader(frame))
			dst, _ = readAllBounded(dst[:0], zr)
		}
	})
}
