package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metrics"
	"github.com/vltava/vltava/internal/security"
)

// conn serves one client connection with two goroutines: serve (this one)
// reads frames, decodes them and calls the handler, one request at a time;
// writeLoop encodes and writes responses in the order they were queued.
// Reading request N+1 overlaps with writing response N, but request N+1 is
// not handled before request N's response is queued, which is the ordering
// Kafka clients rely on.
type conn struct {
	srv *Server
	// nc is the accepted socket, closed to end the connection; stream is
	// what requests are read from and responses written to: nc, or the
	// TLS connection over it.
	nc     net.Conn
	stream net.Conn
	lcfg   ListenerConfig
	info   ConnInfo
	// sasl is the connection's SASL state on SASL_* listeners.
	sasl   *SASLSession
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	// out carries encoded response frames to writeLoop; closed by serve
	// when it stops reading.
	out chan frame
	// writeDone is closed when writeLoop exits.
	writeDone chan struct{}
	// busy is set while a request is being handled, so the idle timeout
	// does not close a connection whose request is parked.
	busy atomic.Bool
}

func newConn(srv *Server, l *listener, nc net.Conn, id uint64) *conn {
	ctx, cancel := context.WithCancel(srv.ctx)
	c := &conn{
		srv:    srv,
		nc:     nc,
		stream: nc,
		lcfg:   l.cfg,
		info: ConnInfo{
			ID:               id,
			Listener:         l.cfg.Name,
			SecurityProtocol: l.cfg.SecurityProtocol,
			Remote:           nc.RemoteAddr(),
			Local:            nc.LocalAddr(),
			Principal:        security.Anonymous,
		},
		ctx:       ctx,
		cancel:    cancel,
		out:       make(chan frame, 64),
		writeDone: make(chan struct{}),
	}
	c.log = srv.log.With("conn", id, "remote", c.info.Remote.String(), "listener", l.cfg.Name)
	if l.cfg.SASL != nil {
		host, _, _ := net.SplitHostPort(c.info.Remote.String())
		c.sasl = newSASLSession(l.cfg.SASL, &c.info, l.cfg.TLS != nil, host)
		c.info.SASL = c.sasl
	}
	return c
}

// serve runs the connection: readLoop reads frames, this goroutine handles
// them one at a time, writeLoop writes the responses. Reading is a
// goroutine of its own so that a client that disconnects is noticed while
// one of its requests is parked (a fetch long-poll, a JoinGroup waiting for
// the rebalance): the read ends, the context is cancelled and the parked
// request returns. readLoop holds at most one frame beyond the one being
// handled, which bounds a pipelining client's memory here.
func (c *conn) serve() {
	metrics.ConnectionOpened(c.info.Listener)
	defer metrics.ConnectionClosed(c.info.Listener)
	if !c.authenticateTransport() {
		c.cancel()
		c.nc.Close()
		return
	}
	go c.writeLoop()
	frames := make(chan []byte)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(frames)
		c.readLoop(frames)
	}()
	defer func() {
		c.cancel()
		// Answers already queued (a failed authentication's) are
		// written before the socket closes, within a bound.
		close(c.out)
		c.stream.SetWriteDeadline(time.Now().Add(time.Second))
		<-c.writeDone
		c.nc.Close() // unblocks readLoop
		for range frames {
		}
		<-readDone
	}()
	for frame := range frames {
		c.busy.Store(true)
		ok := c.handleFrame(frame)
		if reusableFrame(frame) {
			putFrame(frame)
		}
		if ok {
			ok = c.awaitThrottle()
		}
		c.busy.Store(false)
		if !ok {
			return
		}
	}
}

// awaitThrottle holds the connection muted until a throttle set by the
// handler ends (ConnInfo.Throttle, KIP-219): the response is already
// queued, and no further request is handled meanwhile (readLoop holds at
// most one more frame, then stops reading). busy stays set, so the idle
// timeout does not count the mute. False when the connection ends.
func (c *conn) awaitThrottle() bool {
	wait := time.Until(c.info.throttledUntil)
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// readLoop reads request frames until the connection fails, the client
// closes it, or a frame is malformed; then it cancels the connection's
// context.
func (c *conn) readLoop(frames chan<- []byte) {
	defer c.cancel()
	br := bufio.NewReaderSize(c.stream, 64<<10)
	var sizeBuf [4]byte
	for {
		if err := c.setIdleDeadline(); err != nil {
			return
		}
		if _, err := io.ReadFull(br, sizeBuf[:]); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && c.busy.Load() {
				// Not idle: a request is being handled.
				continue
			}
			c.logReadEnd(err)
			return
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		if size < 0 || size > c.srv.cfg.MaxRequestSize {
			// Kafka closes the connection on an oversized frame
			// (InvalidReceiveException) without reading it.
			c.log.Warn("closing connection: request frame size out of range",
				"size", size, "socket.request.max.bytes", c.srv.cfg.MaxRequestSize)
			return
		}
		frame := getFrame(int(size))
		// A frame in progress is read without the idle deadline: a
		// slow sender of a large request is not idle.
		c.stream.SetReadDeadline(time.Time{})
		if _, err := io.ReadFull(br, frame); err != nil {
			putFrame(frame)
			c.logReadEnd(err)
			return
		}
		select {
		case frames <- frame:
		case <-c.ctx.Done():
			return
		}
	}
}

func (c *conn) setIdleDeadline() error {
	if c.srv.cfg.IdleTimeout <= 0 {
		return nil
	}
	return c.stream.SetReadDeadline(time.Now().Add(c.srv.cfg.IdleTimeout))
}

func (c *conn) logReadEnd(err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), c.ctx.Err() != nil:
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.log.Info("closing idle connection", "connections.max.idle.ms", c.srv.cfg.IdleTimeout.Milliseconds())
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.log.Debug("connection closed mid-frame")
	default:
		c.log.Debug("connection read ended", "err", err)
	}
}

// handleFrame decodes and answers one request. It returns false when the
// connection must close: malformed frames, unknown API keys and unsupported
// versions close the connection, as Kafka does.
func (c *conn) handleFrame(frame []byte) (keepOpen bool) {
	received := time.Now()
	if c.sasl != nil && c.sasl.raw {
		return c.handleRawToken(frame)
	}
	h, body, err := parseHeader(frame)
	if err != nil {
		c.log.Warn("closing connection: malformed request", "err", err)
		return false
	}
	if c.sasl != nil {
		if err := c.sasl.admits(h.key); err != nil {
			// Kafka's SaslServerAuthenticator closes the connection
			// (IllegalSaslStateException) on any other request.
			c.log.Info("closing connection", "api", kmsg.NameForKey(h.key), "reason", err.Error())
			return false
		}
	}
	minV, maxV, ok := c.srv.handler.VersionRange(h.key)
	if !ok {
		c.log.Warn("closing connection: unsupported API key", "api_key", h.key, "client_id", h.clientID)
		return false
	}
	req := kmsg.RequestForKey(h.key)
	if req == nil {
		c.log.Warn("closing connection: unsupported API key", "api_key", h.key, "client_id", h.clientID)
		return false
	}
	version := h.version
	if version < minV || version > maxV {
		// KIP-511: a client may send ApiVersions at a version newer
		// than the broker's; the handler answers it at v0 with
		// UNSUPPORTED_VERSION and the version table. Any other API
		// at an unsupported version closes the connection.
		if h.key != int16(kmsg.ApiVersions) || version < 0 {
			c.log.Warn("closing connection: unsupported API version",
				"api", kmsg.NameForKey(h.key), "version", version, "supported", fmt.Sprintf("%d-%d", minV, maxV), "client_id", h.clientID)
			return false
		}
		req.SetVersion(0)
		body = nil
	} else {
		req.SetVersion(version)
		if req.IsFlexible() {
			if body, err = skipTags(body); err != nil {
				c.log.Warn("closing connection: malformed request header", "api", kmsg.NameForKey(h.key), "err", err)
				return false
			}
		}
		if err := req.ReadFrom(body); err != nil {
			c.log.Warn("closing connection: malformed request body",
				"api", kmsg.NameForKey(h.key), "version", version, "client_id", h.clientID, "err", err)
			return false
		}
	}
	r := &Request{
		Key:           h.key,
		Version:       version,
		CorrelationID: h.correlationID,
		ClientID:      h.clientID,
		Body:          req,
		Conn:          &c.info,
		Received:      received,
		Size:          len(frame),
	}
	metrics.RequestStarted()
	resp, err := c.callHandler(r)
	metrics.RequestDone(h.key, version, time.Since(received))
	c.maybeLogRequest(r, len(frame), received)
	if err != nil {
		metrics.RequestFailed(h.key)
		c.log.Warn("closing connection", "api", kmsg.NameForKey(h.key), "version", version, "err", err)
		return false
	}
	if resp == nil {
		return true
	}
	select {
	case c.out <- encodeFrame(h.correlationID, resp):
		return c.sasl == nil || !c.sasl.closeAfterResponse
	case <-c.writeDone:
		return false
	}
}

// callHandler calls the handler, turning a panic into an error so that one
// bad request closes one connection and never the broker.
func (c *conn) callHandler(r *Request) (resp kmsg.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("handler panic", "api", kmsg.NameForKey(r.Key), "version", r.Version,
				"panic", p, "stack", string(debug.Stack()))
			resp, err = nil, fmt.Errorf("internal error handling %s", kmsg.NameForKey(r.Key))
		}
	}()
	return c.srv.handler.Handle(c.ctx, r)
}

// writeLoop writes queued response frames, batching whatever is queued into
// one write.
func (c *conn) writeLoop() {
	defer close(c.writeDone)
	bw := bufio.NewWriterSize(c.stream, 64<<10)
	for f := range c.out {
		if err := writeFrame(bw, c.stream, f); err != nil {
			c.fail(err)
			return
		}
		for more := true; more; {
			select {
			case f, ok := <-c.out:
				if !ok {
					more = false
					break
				}
				if err := writeFrame(bw, c.stream, f); err != nil {
					c.fail(err)
					return
				}
			default:
				more = false
			}
		}
		if err := bw.Flush(); err != nil {
			c.fail(err)
			return
		}
	}
}

// fail ends a connection whose write side broke: the read side sees the
// closed socket and stops. Draining out keeps serve from blocking.
func (c *conn) fail(err error) {
	if c.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
		c.log.Debug("connection write failed", "err", err)
	}
	c.cancel()
	c.nc.Close()
	go func() {
		for range c.out {
		}
	}()
}
