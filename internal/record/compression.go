package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"
)

// MaxDecompressedBatchBytes bounds how far one batch's records may expand
// when decompressed. Kafka streams records out of the codec and has no such
// bound; a broker that decompresses whole blocks needs one so that a small
// "compression bomb" cannot exhaust memory. 256 MiB is far beyond any batch
// Kafka's clients build (their batch.size defaults to 16 KiB and
// max.request.size to 1 MiB) while still small enough to survive.
const MaxDecompressedBatchBytes = 256 << 20

// errTooLarge is returned when decompression would exceed the bound.
var errTooLarge = fmt.Errorf("%w: decompressed records exceed %d bytes", kerr.CorruptMessage, MaxDecompressedBatchBytes)

// errCodec wraps a codec failure. Kafka surfaces these as an unexpected
// KafkaException (UNKNOWN_SERVER_ERROR); CORRUPT_MESSAGE describes the
// problem to the client better, and the batch CRC has already ruled out
// transport damage by the time we decompress.
func errCodec(c Codec, err error) error {
	if errors.Is(err, kerr.CorruptMessage) {
		return err
	}
	return fmt.Errorf("%w: %s decompression failed: %v", kerr.CorruptMessage, c, err)
}

// errUnknownCodec rejects attribute codec ids 5-7.
func errUnknownCodec(c Codec) error {
	return fmt.Errorf("%w: unknown compression codec id %d", kerr.UnsupportedCompressionType, int8(c))
}

// appendWriter is an io.Writer appending to a slice, so that compressors
// can write straight into the batch being built.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// Level is a codec's compression level as Kafka's compression.gzip.level,
// compression.lz4.level and compression.zstd.level give it (KIP-390), or
// DefaultLevel for the codec's default.
type Level int32

// DefaultLevel selects the codec's default level (Kafka's defaults: gzip
// Deflater.DEFAULT, lz4 9, zstd 3).
const DefaultLevel Level = math.MinInt32

// Pools: codec state is large (gzip ~800 KiB for a writer, lz4 64 KiB
// blocks), and produce validation runs per request, so it is reused, one
// pool per level.
var (
	// gzipWriters[level+1] for levels -1 (Deflater.DEFAULT) to 9.
	gzipWriters [11]sync.Pool
	gzipReaders sync.Pool // *gzip.Reader; NewReader needs a valid stream
	// lz4Writers[i] for lz4Levels[i].
	lz4Writers [len(lz4Levels)]sync.Pool
	lz4Readers = sync.Pool{New: func() any {
		r := lz4.NewReader(nil)
		_ = r.Apply(lz4.ConcurrencyOption(1))
		return r
	}}
	byteReaders = sync.Pool{New: func() any { return new(bytes.Reader) }}
)

// lz4Levels are pierrec/lz4's levels: the fast compressor, then the
// high-compression levels 1-9.
var lz4Levels = [...]lz4.CompressionLevel{lz4.Fast, lz4.Level1, lz4.Level2, lz4.Level3, lz4.Level4,
	lz4.Level5, lz4.Level6, lz4.Level7, lz4.Level8, lz4.Level9}

// lz4LevelIndex maps compression.lz4.level (1-17, default 9) onto
// lz4Levels. Kafka uses lz4-java's fast compressor for level 1 and its
// high compressor at the given level above that; pierrec/lz4's
// high-compression levels stop at 9, so 9-17 all get its strongest.
func lz4LevelIndex(l Level) int {
	if l == DefaultLevel {
		l = 9
	}
	if l <= 1 {
		return 0 // Fast
	}
	return int(min(l, 9))
}

func init() {
	for i := range gzipWriters {
		level := i - 1
		gzipWriters[i].New = func() any {
			w, _ := gzip.NewWriterLevel(nil, level)
			return w
		}
	}
	for i := range lz4Writers {
		level := lz4Levels[i]
		lz4Writers[i].New = func() any {
			w := lz4.NewWriter(nil)
			// Kafka's KafkaLZ4BlockOutputStream writes 64 KiB independent
			// blocks without block or content checksums.
			_ = w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false),
				lz4.BlockChecksumOption(false), lz4.ConcurrencyOption(1), lz4.CompressionLevelOption(level))
			return w
		}
	}
}

// zstd encoders and decoders are safe for concurrent EncodeAll/DecodeAll
// and keep internal pools sized by their concurrency, so one decoder and
// one encoder per klauspost/compress speed serve the whole process.
var (
	zstdOnce sync.Once
	zstdDec  *zstd.Decoder
	zstdErr  error

	zstdEncOnce [zstd.SpeedBestCompression + 1]sync.Once
	zstdEnc     [zstd.SpeedBestCompression + 1]*zstd.Encoder
	zstdEncErr  [zstd.SpeedBestCompression + 1]error
)

func zstdDecoder() (*zstd.Decoder, error) {
	zstdOnce.Do(func() {
		zstdDec, zstdErr = zstd.NewReader(nil, zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)),
			zstd.WithDecoderMaxMemory(MaxDecompressedBatchBytes),
			zstd.WithDecoderMaxWindow(MaxDecompressedBatchBytes))
	})
	return zstdDec, zstdErr
}

// zstdEncoder returns the encoder for compression.zstd.level: zstd's
// numeric levels map onto klauspost/compress's four speeds
// (EncoderLevelFromZstd; level 3, zstd's and Kafka's default, is its
// default speed; negative levels are its fastest).
func zstdEncoder(l Level) (*zstd.Encoder, error) {
	if l == DefaultLevel {
		l = 3
	}
	speed := zstd.EncoderLevelFromZstd(int(l))
	zstdEncOnce[speed].Do(func() {
		zstdEnc[speed], zstdEncErr[speed] = zstd.NewWriter(nil, zstd.WithEncoderLevel(speed),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithEncoderCRC(false))
	})
	return zstdEnc[speed], zstdEncErr[speed]
}

// xerialMagic opens snappy-java's SnappyOutputStream framing, which Kafka's
// Java producer and broker write: the 8-byte magic, then int32 version and
// int32 minimum compatible version (both 1), then chunks of
// [int32 big-endian length][raw snappy block].
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderLen = 16
	// xerialBlockSize is snappy-java's default SnappyOutputStream block.
	xerialBlockSize = 32 << 10
)

// compress appends src compressed with codec at level to dst (snappy has
// no levels).
func compress(dst []byte, codec Codec, level Level, src []byte) ([]byte, error) {
	switch codec {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		if level == DefaultLevel {
			level = -1
		}
		if level < -1 || level > 9 {
			return nil, fmt.Errorf("gzip level %d out of range [-1, 9]", level)
		}
		pool := &gzipWriters[level+1]
		w := pool.Get().(*gzip.Writer)
		defer pool.Put(w)
		aw := appendWriter{b: dst}
		w.Reset(&aw)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return aw.b, nil
	case CodecSnappy:
		return appendXerialSnappy(dst, src), nil
	case CodecLZ4:
		pool := &lz4Writers[lz4LevelIndex(level)]
		w := pool.Get().(*lz4.Writer)
		defer pool.Put(w)
		aw := appendWriter{b: dst}
		w.Reset(&aw)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return aw.b, nil
	case CodecZstd:
		enc, err := zstdEncoder(level)
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(src, dst), nil
	}
	return nil, errUnknownCodec(codec)
}

// appendXerialSnappy writes src in snappy-java's framing, as Kafka's broker
// does when it (re)compresses with snappy.
func appendXerialSnappy(dst, src []byte) []byte {
	dst = append(dst, xerialMagic...)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	for len(src) > 0 {
		chunk := src[:min(len(src), xerialBlockSize)]
		src = src[len(chunk):]
		lenAt := len(dst)
		dst = binary.BigEndian.AppendUint32(dst, 0)
		dst = growTo(dst, s2.MaxEncodedLen(len(chunk)))
		enc := s2.EncodeSnappy(dst[len(dst):cap(dst)], chunk)
		binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(enc)))
		dst = dst[:len(dst)+len(enc)]
	}
	return dst
}

// growTo makes sure dst has room for n more bytes without reslicing len.
func growTo(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	grown := make([]byte, len(dst), len(dst)+n+len(dst)/4)
	copy(grown, dst)
	return grown
}

// decompress appends the decompression of src to dst, refusing output
// beyond MaxDecompressedBatchBytes.
func decompress(dst []byte, codec Codec, src []byte) ([]byte, error) {
	switch codec {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		br := byteReaders.Get().(*bytes.Reader)
		defer byteReaders.Put(br)
		br.Reset(src)
		var zr *gzip.Reader
		if pooled, ok := gzipReaders.Get().(*gzip.Reader); ok {
			zr = pooled
			if err := zr.Reset(br); err != nil {
				gzipReaders.Put(zr)
				return nil, errCodec(codec, err)
			}
		} else {
			var err error
			if zr, err = gzip.NewReader(br); err != nil {
				return nil, errCodec(codec, err)
			}
		}
		defer gzipReaders.Put(zr)
		out, err := readAllBounded(dst, zr)
		if err != nil {
			return nil, errCodec(codec, err)
		}
		return out, nil
	case CodecSnappy:
		out, err := decodeSnappy(dst, src)
		if err != nil {
			return nil, errCodec(codec, err)
		}
		return out, nil
	case CodecLZ4:
		out, err := decodeLZ4Frames(dst, src)
		if !errors.Is(err, errLinkedBlocks) {
			if err != nil && !errors.Is(err, errTooLarge) {
				err = errCodec(codec, err)
			}
			return out, err
		}
		br := byteReaders.Get().(*bytes.Reader)
		defer byteReaders.Put(br)
		br.Reset(src)
		zr := lz4Readers.Get().(*lz4.Reader)
		defer lz4Readers.Put(zr)
		zr.Reset(br)
		out, err = readAllBounded(dst, zr)
		if err != nil {
			return nil, errCodec(codec, err)
		}
		return out, nil
	case CodecZstd:
		dec, err := zstdDecoder()
		if err != nil {
			return nil, err
		}
		out, err := dec.DecodeAll(src, dst)
		if err != nil {
			return nil, errCodec(codec, err)
		}
		return out, nil
	}
	return nil, errUnknownCodec(codec)
}

// readAllBounded reads r to EOF, appending to dst.
func readAllBounded(dst []byte, r io.Reader) ([]byte, error) {
	start := len(dst)
	if cap(dst)-len(dst) < 4096 {
		dst = growTo(dst, 4096)
	}
	for {
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst)-start > MaxDecompressedBatchBytes {
			return nil, errTooLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return nil, err
		}
		if len(dst) == cap(dst) {
			dst = growTo(dst, cap(dst)) // double
		}
	}
}

// decodeSnappy accepts both framings Kafka clients produce: snappy-java's
// xerial stream (Java, librdkafka) and a bare snappy block (franz-go,
// kafka-python, some librdkafka builds), as snappy-java's SnappyInputStream
// does.
func decodeSnappy(dst, src []byte) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		return appendSnappyBlock(dst, src, 0)
	}
	start := len(dst)
	for len(src) > 0 {
		// snappy-java also accepts concatenated streams, each with its own
		// header.
		if bytes.HasPrefix(src, xerialMagic) {
			if len(src) < xerialHeaderLen {
				return nil, errors.New("truncated xerial header")
			}
			src = src[xerialHeaderLen:]
			continue
		}
		if len(src) < 4 {
			return nil, errors.New("truncated xerial chunk length")
		}
		n := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(n) > uint64(len(src)) {
			return nil, fmt.Errorf("xerial chunk of %d bytes exceeds the %d left", n, len(src))
		}
		var err error
		if dst, err = appendSnappyBlock(dst, src[:n], len(dst)-start); err != nil {
			return nil, err
		}
		src = src[n:]
	}
	return dst, nil
}

// appendSnappyBlock decodes one raw snappy block onto dst; already is the
// output produced so far for this batch, counted against the bound.
func appendSnappyBlock(dst, block []byte, already int) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if already+n > MaxDecompressedBatchBytes {
		return nil, errTooLarge
	}
	dst = growTo(dst, n)
	out, err := s2.Decode(dst[len(dst):len(dst)+n], block)
	if err != nil {
		return nil, err
	}
	if len(out) != n {
		return nil, errors.New("snappy block shorter than its declared length")
	}
	return dst[:len(dst)+n], nil
}

// decompressBuffers recycles decompression output between validations.
var decompressBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// maxPooledBuffer keeps one huge batch from pinning memory in the pool.
const maxPooledBuffer = 4 << 20

func getBuffer() *[]byte { return decompressBuffers.Get().(*[]byte) }

func putBuffer(b *[]byte) {
	if cap(*b) > maxPooledBuffer {
		return
	}
	*b = (*b)[:0]
	decompressBuffers.Put(b)
}
