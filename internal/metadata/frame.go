package metadata

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// Metadata log and checkpoint files are sequences of frames:
//
//	[length uint32 big-endian][crc32c(payload) uint32 big-endian][payload]
//
// The CRC lets replay tell a torn or partially written tail (crash during
// append) from a complete entry, as Kafka's log recovery does with batch CRCs.

const frameHeaderSize = 8

// maxFramePayload bounds a frame so a corrupt length cannot make replay
// allocate gigabytes. Snapshots of very large clusters are the biggest frames.
const maxFramePayload = 1 << 30

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errTornFrame reports an incomplete or corrupt frame: what a crash in the
// middle of an append leaves behind.
var errTornFrame = errors.New("metadata: torn or corrupt frame")

// AppendFrame appends the frame of payload to dst.
func AppendFrame(dst, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
	return append(dst, payload...)
}

// NextFrame parses the frame at the start of buf and returns its payload and
// total size. It returns errTornFrame if buf does not start with a complete,
// intact frame.
func NextFrame(buf []byte) (payload []byte, size int, err error) {
	if len(buf) < frameHeaderSize {
		return nil, 0, errTornFrame
	}
	n := binary.BigEndian.Uint32(buf)
	if n == 0 || n > maxFramePayload || uint64(len(buf)-frameHeaderSize) < uint64(n) {
		return nil, 0, errTornFrame
	}
	payload = buf[frameHeaderSize : frameHeaderSize+int(n)]
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(buf[4:]) {
		return nil, 0, errTornFrame
	}
	return payload, frameHeaderSize + int(n), nil
}
