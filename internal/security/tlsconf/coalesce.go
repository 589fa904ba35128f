package tlsconf

import (
	"crypto/tls"
	"errors"
	"net"
	"sync"
)

// crypto/tls writes every record of at most 16 KiB with a write(2) of its
// own, so a 1 MiB produce request or a 64 KiB fetch chunk costs 64 or 4
// syscalls and as many wake-ups of the reader, where plain TCP costs one.
// A Conn gathers the records one Write of the application produces and
// hands them to the socket together, up to coalesceMax bytes a syscall.

// coalesceMax bounds what a Write holds before it goes to the socket.
const coalesceMax = 256 << 10

// coalesceBuffers hold a Write's records while it runs; a connection holds
// one only for the length of a Write.
var coalesceBuffers = sync.Pool{New: func() any { b := make([]byte, 0, coalesceMax+32<<10); return &b }}

// Conn is a TLS connection whose Writes reach the socket in as few
// syscalls as coalesceMax allows. Everything but Write is the tls.Conn's.
type Conn struct {
	*tls.Conn
	raw *coalescer
}

// Server is tls.Server over nc with coalesced writes.
func Server(nc net.Conn, cfg *tls.Config) *Conn {
	raw := &coalescer{Conn: nc}
	return &Conn{Conn: tls.Server(raw, cfg), raw: raw}
}

// Client is tls.Client over nc with coalesced writes.
func Client(nc net.Conn, cfg *tls.Config) *Conn {
	raw := &coalescer{Conn: nc}
	return &Conn{Conn: tls.Client(raw, cfg), raw: raw}
}

// Write encrypts p and sends its records together. The handshake runs
// first, uncoalesced, since it waits for the peer's answers between its
// own writes.
func (c *Conn) Write(p []byte) (int, error) {
	if err := c.Conn.Handshake(); err != nil {
		return 0, err
	}
	c.raw.hold()
	n, err := c.Conn.Write(p)
	if ferr := c.raw.release(); ferr != nil {
		return 0, ferr
	}
	return n, err
}

// coalescer is the socket under the tls.Conn. Between hold and release
// its Writes are gathered (they come from the tls.Conn, one record each,
// under the tls.Conn's output lock; a reply the tls.Conn sends from Read,
// such as a KeyUpdate, may land among them, hence mu); otherwise they go
// straight to the socket. A failed write fails every later one: the
// tls.Conn counted those records as sent, so the stream is broken.
type coalescer struct {
	net.Conn
	mu   sync.Mutex
	held *[]byte
	err  error
}

var errBroken = errors.New("tls: connection broken by an earlier failed write")

func (w *coalescer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	if w.held == nil {
		n, err := w.Conn.Write(p)
		if err != nil {
			w.err = errBroken
		}
		return n, err
	}
	*w.held = append(*w.held, p...)
	if len(*w.held) >= coalesceMax {
		if err := w.sendLocked(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (w *coalescer) hold() {
	w.mu.Lock()
	w.held = coalesceBuffers.Get().(*[]byte)
	w.mu.Unlock()
}

// release sends what was gathered and writes straight through again.
func (w *coalescer) release() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.sendLocked()
	*w.held = (*w.held)[:0]
	coalesceBuffers.Put(w.held)
	w.held = nil
	return err
}

func (w *coalescer) sendLocked() error {
	if w.err != nil {
		return w.err
	}
	if len(*w.held) == 0 {
		return nil
	}
	_, err := w.Conn.Write(*w.held)
	*w.held = (*w.held)[:0]
	if err != nil {
		// The caller sees the socket's error (a deadline, a reset);
		// later writes see errBroken.
		w.err = errBroken
		return err
	}
	return nil
}
