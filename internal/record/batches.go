package record

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrTruncated reports that a byte region ends inside a batch. Fetch
// responses and segment reads legitimately end this way (Kafka returns
// partial batches when fetch.max.bytes cuts one), so iteration treats it as
// the end rather than as corruption.
var ErrTruncated = errors.New("record: batch truncated at end of buffer")

// NextBatch splits the first v2 batch off b. It returns the decoded header,
// the batch's bytes (aliasing b) and the bytes after it.
//
// When b is empty, or too short to hold the batch that starts it, NextBatch
// returns ErrTruncated and rest == b. A length field too small for a v2
// batch or a magic other than 2 is an error wrapping kerr.CorruptMessage,
// since iteration cannot continue past it. The CRC is not checked.
func NextBatch(b []byte) (hdr Header, batch []byte, rest []byte, err error) {
	if len(b) < LengthFieldEnd {
		return Header{}, nil, b, ErrTruncated
	}
	length := int32(binary.BigEndian.Uint32(b[offLength:]))
	if length < minV2BatchLength {
		return Header{}, nil, b, fmt.Errorf("%w: batch length %d is below the v2 minimum %d", kerr.CorruptMessage, length, minV2BatchLength)
	}
	if len(b) > offMagic {
		if m := int8(b[offMagic]); m != currentMagic {
			return Header{}, nil, b, fmt.Errorf("%w: unsupported record batch magic %d", kerr.CorruptMessage, m)
		}
	}
	total := LengthFieldEnd + int(length)
	if len(b) < total {
		return Header{}, nil, b, ErrTruncated
	}
	hdr, _ = ParseHeader(b) // total >= BatchHeaderSize, cannot fail
	return hdr, b[:total:total], b[total:], nil
}

// Batches iterates the whole v2 batches in a byte region, such as a fetch
// response's records or a segment read. It stops cleanly at a truncated
// tail; Err reports only corruption that prevents iteration. A Batches is
// not safe for concurrent use.
//
//	it := record.NewBatches(buf)
//	for it.Next() {
//		use(it.Header(), it.Batch())
//	}
//	if err := it.Err(); err != nil { ... }
type Batches struct {
	rest  []byte
	pos   int // offset of rest within the original region
	start int // offset of the current batch within the original region
	hdr   Header
	batch []byte
	err   error
}

// NewBatches returns an iterator over the batches in b. b is not copied.
func NewBatches(b []byte) *Batches { return &Batches{rest: b} }

// Next advances to the next complete batch, reporting whether there is one.
func (it *Batches) Next() bool {
	if it.err != nil {
		return false
	}
	hdr, batch, rest, err := NextBatch(it.rest)
	if err != nil {
		if !errors.Is(err, ErrTruncated) {
			it.err = err
		}
		it.batch = nil
		return false
	}
	it.hdr, it.batch, it.start = hdr, batch, it.pos
	it.pos += len(batch)
	it.rest = rest
	return true
}

// Header is the current batch's header.
func (it *Batches) Header() Header { return it.hdr }

// Batch is the current batch's bytes, aliasing the region.
func (it *Batches) Batch() []byte { return it.batch }

// Position is the byte offset of the current batch within the region.
func (it *Batches) Position() int { return it.start }

// Remaining returns the bytes not yet consumed: after Next returns false
// without error this is the truncated tail (possibly empty).
func (it *Batches) Remaining() []byte { return it.rest }

// Err returns the corruption that stopped iteration, or nil.
func (it *Batches) Err() error { return it.err }
