package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Chunk is a piece of an encoded response: bytes, or a region of a file.
// File regions are sent with sendfile(2) on plaintext TCP connections, so
// log data goes from the page cache to the socket without being copied
// through user space; elsewhere they are read and written.
type Chunk struct {
	Bytes  []byte
	File   *os.File
	Offset int64
	Length int64
}

func (c Chunk) size() int64 {
	if c.File != nil {
		return c.Length
	}
	return int64(len(c.Bytes))
}

// ChunkedResponse is a response that encodes its own body in chunks. The
// fetch handler returns one so that record batches are sent from their
// segment files.
type ChunkedResponse interface {
	kmsg.Response
	// AppendChunks appends the encoded response body (what AppendTo would
	// produce, without size, correlation id or header tags).
	AppendChunks(dst []Chunk) []Chunk
}

// frame is one response on its way to the socket.
type frame []Chunk

// encodeFrame encodes a response frame: size, correlation id, header tags
// (response header v1, except ApiVersions, KIP-511) and the body.
func encodeFrame(correlationID int32, resp kmsg.Response) frame {
	hdr := make([]byte, 8, 64)
	kbin.AppendInt32(hdr[:4], correlationID)
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		hdr = append(hdr, 0)
	}
	cr, ok := resp.(ChunkedResponse)
	if !ok {
		b := resp.AppendTo(hdr)
		kbin.AppendInt32(b[:0], int32(len(b)-4))
		return frame{{Bytes: b}}
	}
	f := cr.AppendChunks(frame{{Bytes: hdr}})
	var size int64
	for _, c := range f {
		size += c.size()
	}
	kbin.AppendInt32(hdr[:0], int32(size-4))
	return f
}

// writeFrame writes a frame to bw, flushing bw before file regions and
// sending those with sendfile when the connection allows it.
func writeFrame(bw *bufio.Writer, nc net.Conn, f frame) error {
	for _, c := range f {
		if c.File == nil {
			if _, err := bw.Write(c.Bytes); err != nil {
				return err
			}
			continue
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		if err := sendFileRegion(nc, c.File, c.Offset, c.Length); err != nil {
			return err
		}
	}
	return nil
}

// regionBuffers are the buffers file regions are read into on connections
// where sendfile cannot be used (TLS: the bytes must be encrypted in user
// space). 64 KiB is four TLS records of 16 KiB, so each pread feeds whole
// records to the TLS writer, which hands the four to the socket in one
// write (tlsconf.Conn).
var regionBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// copyFileRegion sends a file region by pread into a pooled buffer and a
// write of what was read: no lock is held, and the buffer is not allocated
// per fetch.
func copyFileRegion(w io.Writer, f *os.File, offset, length int64) error {
	bp := regionBuffers.Get().(*[]byte)
	defer regionBuffers.Put(bp)
	buf := *bp
	for length > 0 {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), length)], offset)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			offset += int64(n)
			length -= int64(n)
		}
		if err != nil {
			if errors.Is(err, io.EOF) && length > 0 {
				return fmt.Errorf("file region ended with %d bytes left to send", length)
			}
			if !errors.Is(err, io.EOF) {
				return err
			}
		}
	}
	return nil
}

// sendFileRegion sends length bytes of f from offset to nc: with sendfile
// on a TCP connection, otherwise by reading and writing.
func sendFileRegion(nc net.Conn, f *os.File, offset, length int64) error {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return copyFileRegion(nc, f, offset, length)
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	src, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var sendErr error
	ctlErr := src.Control(func(srcFD uintptr) {
		for length > 0 && sendErr == nil {
			werr := raw.Write(func(dstFD uintptr) bool {
				n, err := syscall.Sendfile(int(dstFD), int(srcFD), &offset, int(min(length, 1<<30)))
				if n > 0 {
					length -= int64(n)
				}
				switch {
				case errors.Is(err, syscall.EAGAIN):
					return false // wait until the socket is writable
				case err != nil:
					sendErr = err
				case n == 0:
					sendErr = fmt.Errorf("sendfile: file ended with %d bytes left to send", length)
				}
				return true
			})
			if werr != nil && sendErr == nil {
				sendErr = werr
			}
		}
	})
	if ctlErr != nil {
		return ctlErr
	}
	return sendErr
}
