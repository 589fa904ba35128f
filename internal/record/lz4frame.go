package record

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pierrec/lz4/v4"
)

// LZ4 frames (the format Kafka's lz4 codec uses) are decoded here block by
// block with lz4.UncompressBlock instead of through lz4.Reader, to skip the
// frame's xxhash32 checksums: the batch's CRC32C already covers every
// compressed byte, and on the produce path the content checksum was a
// quarter of the broker's CPU for lz4 batches. Frames with linked
// (dependent) blocks, which Kafka's own encoder never writes, go through
// lz4.Reader.
//
// Frame layout (lz4 frame format 1.6): magic 0x184D2204 (little endian), FLG,
// BD, optional 8-byte content size, optional 4-byte dictionary id, header
// checksum byte; then blocks, each a 4-byte little-endian size (high bit set:
// stored uncompressed) and its data, followed by a 4-byte checksum when FLG
// says so; a zero size ends the frame, followed by a 4-byte content checksum
// when FLG says so. Frames may follow one another.

const lz4FrameMagic = 0x184D2204

var errLZ4Frame = errors.New("malformed lz4 frame")

// errLinkedBlocks reports a frame lz4frame cannot decode on its own.
var errLinkedBlocks = errors.New("lz4 frame with linked blocks")

// decodeLZ4Frames appends the decompression of src, a sequence of lz4
// frames, to dst.
func decodeLZ4Frames(dst, src []byte) ([]byte, error) {
	start := len(dst)
	for len(src) > 0 {
		if len(src) < 7 || binary.LittleEndian.Uint32(src) != lz4FrameMagic {
			return nil, fmt.Errorf("%w: bad magic", errLZ4Frame)
		}
		flg, bd := src[4], src[5]
		if flg>>6 != 1 {
			return nil, fmt.Errorf("%w: version %d", errLZ4Frame, flg>>6)
		}
		if flg&0x20 == 0 {
			return nil, errLinkedBlocks
		}
		blockChecksum := flg&0x10 != 0
		contentChecksum := flg&0x04 != 0
		blockMax := 1 << (8 + 2*((bd>>4)&0x7)) // 4: 64 KiB … 7: 4 MiB
		if blockMax < 64<<10 || blockMax > 4<<20 {
			return nil, fmt.Errorf("%w: block size code %d", errLZ4Frame, (bd>>4)&0x7)
		}
		pos := 6
		if flg&0x08 != 0 {
			pos += 8 // content size
		}
		if flg&0x01 != 0 {
			pos += 4 // dictionary id
		}
		pos++ // header checksum
		for {
			if pos+4 > len(src) {
				return nil, fmt.Errorf("%w: truncated block size", errLZ4Frame)
			}
			size := binary.LittleEndian.Uint32(src[pos:])
			pos += 4
			if size == 0 {
				break // end mark
			}
			stored := size&0x80000000 != 0
			size &= 0x7fffffff
			if int(size) > blockMax || pos+int(size) > len(src) {
				return nil, fmt.Errorf("%w: block of %d bytes", errLZ4Frame, size)
			}
			block := src[pos : pos+int(size)]
			pos += int(size)
			if blockChecksum {
				pos += 4
			}
			if stored {
				dst = append(dst, block...)
			} else {
				dst = growTo(dst, blockMax)
				n, err := lz4.UncompressBlock(block, dst[len(dst):len(dst)+blockMax])
				if err != nil {
					return nil, fmt.Errorf("%w: %v", errLZ4Frame, err)
				}
				dst = dst[:len(dst)+n]
			}
			if len(dst)-start > MaxDecompressedBatchBytes {
				return nil, errTooLarge
			}
		}
		if contentChecksum {
			pos += 4
		}
		if pos > len(src) {
			return nil, fmt.Errorf("%w: truncated frame end", errLZ4Frame)
		}
		src = src[pos:]
	}
	return dst, nil
}
