package server

import (
	"encoding/binary"
	"math/bits"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Produce request frames are reused: allocating (and zeroing) a fresh
// buffer per request was a tenth of the broker's CPU on the produce path. A
// decoded request aliases its frame (kmsg does not copy byte fields), so a
// frame may only be reused when nothing keeps a byte slice of the request
// past the handler: true of Produce, whose batches are in the log (copied
// by the write) when the handler returns, and not of, say, JoinGroup, whose
// member metadata the group coordinator keeps. Other frames are left to the
// garbage collector.
//
// Buffers come in power-of-two classes from 4 KiB to 16 MiB; larger frames
// are allocated and dropped.
const (
	minFrameClass = 12 // 4 KiB
	maxFrameClass = 24 // 16 MiB
)

var framePools [maxFrameClass + 1]sync.Pool

func frameClass(size int) int {
	if size <= 1<<minFrameClass {
		return minFrameClass
	}
	return bits.Len(uint(size - 1))
}

// reusableFrame reports whether a handled request's frame may be reused.
func reusableFrame(frame []byte) bool {
	return len(frame) >= 2 && int16(binary.BigEndian.Uint16(frame)) == int16(kmsg.Produce)
}

// getFrame returns a buffer of length size, its contents undefined.
func getFrame(size int) []byte {
	c := frameClass(size)
	if c > maxFrameClass {
		return make([]byte, size)
	}
	if b, ok := framePools[c].Get().(*[]byte); ok {
		return (*b)[:size]
	}
	return make([]byte, size, 1<<c)
}

// putFrame returns a buffer from getFrame for reuse.
func putFrame(b []byte) {
	c := frameClass(cap(b))
	if c > maxFrameClass || cap(b) != 1<<c {
		return
	}
	b = b[:cap(b)]
	framePools[c].Put(&b)
}
