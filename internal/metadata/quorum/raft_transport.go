package quorum

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// raftStreamLayer is the TCP stream layer under raft's NetworkTransport. It
// shares the controller listener's port between three protocols by looking
// at the first byte of each accepted connection:
//
//   - raft's NetworkTransport starts every connection with an RPC type byte
//     (0..4 in raft v1.8); raft connections are handed to raft's Accept with
//     that byte put back;
//   - the join RPC (raft_join.go) starts with joinRPCByte;
//   - Kafka-protocol connections to this node's controller (brokers'
//     registrations, heartbeats, AlterPartition, forwarded admin requests)
//     start with ControllerRPCByte, which is consumed; the rest of the
//     stream is ordinary Kafka request frames, handed to whoever accepts
//     from ControllerListener.
//
// Thread-safety: safe for concurrent use; Close is idempotent.
type raftStreamLayer struct {
	ln     net.Listener
	logger *slog.Logger
	// advertise is the address other nodes dial (Addr); raft sends it as
	// this node's address in its RPC headers.
	advertise string
	// join answers one join request on conn (after the type byte). Every
	// node answers; one that is not the leader points at the leader.
	join func(conn net.Conn, r *bufio.Reader)
	// tls secures every connection of the port (raft_tls.go); nil: none.
	tls *QuorumTLS

	raftConns chan net.Conn
	// controller receives the connections that start with
	// ControllerRPCByte.
	controller *controllerListener
	closeOnce  sync.Once
	closed     chan struct{}
}

// joinRPCByte starts a join RPC connection. It is far from raft's RPC type
// bytes so a future raft RPC type cannot collide with it.
const joinRPCByte byte = 'J'

// ControllerRPCByte starts a Kafka-protocol connection to a controller on its
// quorum port (controller.quorum.voters host:port). It can start neither a
// raft RPC (raft's type bytes are small integers, 0..4 in raft v1.8, and
// grow by one per new RPC type) nor a join request (joinRPCByte). A plain
// Kafka client cannot produce it by accident either: its first byte is the
// top byte of a frame size, and 'K' (0x4b) would announce a frame over 1
// GiB, beyond any socket.request.max.bytes, so nothing Kafka would accept is
// mistaken for it. A dialer writes it once, right after connecting, and
// then speaks Kafka's protocol.
const ControllerRPCByte byte = 'K'

// firstByteTimeout bounds how long an accepted connection may stay silent
// before the layer knows which protocol it speaks.
const firstByteTimeout = 10 * time.Second

var _ raft.StreamLayer = (*raftStreamLayer)(nil)

func newRaftStreamLayer(ln net.Listener, logger *slog.Logger, advertise string, join func(net.Conn, *bufio.Reader), tlsc *QuorumTLS) *raftStreamLayer {
	s := &raftStreamLayer{
		ln: ln, logger: logger, advertise: advertise, join: join, tls: tlsc,
		raftConns: make(chan net.Conn), closed: make(chan struct{}),
	}
	s.controller = &controllerListener{stream: s, conns: make(chan net.Conn), closed: make(chan struct{})}
	go s.acceptLoop()
	return s
}

func (s *raftStreamLayer) acceptLoop() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.closed:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.logger.Warn("raft listener accept failed", "err", err)
			select {
			case <-s.closed:
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		go s.route(conn)
	}
}

// route reads the first byte of conn and hands it to raft, the join RPC or
// the controller listener.
func (s *raftStreamLayer) route(raw net.Conn) {
	conn, err := s.tls.accept(raw, firstByteTimeout)
	if err != nil {
		s.logger.Info("quorum port: TLS handshake failed", "remote", raw.RemoteAddr().String(), "err", err)
		raw.Close()
		return
	}
	br := bufio.NewReader(conn)
	conn.SetReadDeadline(time.Now().Add(firstByteTimeout))
	b, err := br.Peek(1)
	conn.SetReadDeadline(time.Time{})
	if err != nil {
		conn.Close()
		return
	}
	switch b[0] {
	case joinRPCByte:
		br.Discard(1)
		if s.join == nil {
			conn.Close()
			return
		}
		s.join(conn, br)
		return
	case ControllerRPCByte:
		br.Discard(1)
		s.controller.deliver(&bufferedConn{Conn: conn, r: br})
		return
	}
	select {
	case s.raftConns <- &bufferedConn{Conn: conn, r: br}:
	case <-s.closed:
		conn.Close()
	}
}

// Accept implements net.Listener for raft.
func (s *raftStreamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-s.raftConns:
		return c, nil
	case <-s.closed:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (s *raftStreamLayer) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.closed)
		err = s.ln.Close()
	})
	return err
}

// Addr implements net.Listener.
func (s *raftStreamLayer) Addr() net.Addr {
	if s.advertise != "" {
		return advertisedAddr(s.advertise)
	}
	return s.ln.Addr()
}

// advertisedAddr is a host:port that may not be the bound address (e.g.
// bound to 0.0.0.0, advertised by name).
type advertisedAddr string

func (advertisedAddr) Network() string  { return "tcp" }
func (a advertisedAddr) String() string { return string(a) }

// Dial implements raft.StreamLayer.
func (s *raftStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return s.tls.dial(context.Background(), string(address), timeout)
}

// controllerListener is the net.Listener of the Kafka-protocol connections
// that reached the quorum port with ControllerRPCByte (the byte already
// consumed). Closing it stops only its own Accept; the port stays raft's. A
// connection nobody accepts within firstByteTimeout (a node that does not
// serve the controller APIs) is closed, and the dialer tries another
// controller.
//
// Thread-safety: safe for concurrent use; Close is idempotent.
type controllerListener struct {
	stream    *raftStreamLayer
	conns     chan net.Conn
	closeOnce sync.Once
	closed    chan struct{}
}

var _ net.Listener = (*controllerListener)(nil)

func (c *controllerListener) deliver(conn net.Conn) {
	t := time.NewTimer(firstByteTimeout)
	defer t.Stop()
	select {
	case c.conns <- conn:
	case <-c.closed:
		conn.Close()
	case <-c.stream.closed:
		conn.Close()
	case <-t.C:
		conn.Close()
	}
}

// Accept implements net.Listener.
func (c *controllerListener) Accept() (net.Conn, error) {
	select {
	case conn := <-c.conns:
		return conn, nil
	case <-c.closed:
		return nil, net.ErrClosed
	case <-c.stream.closed:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (c *controllerListener) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// Addr implements net.Listener: the bound quorum address (not the
// advertised one, which for a single-node quorum is a placeholder).
func (c *controllerListener) Addr() net.Addr { return c.stream.ln.Addr() }

// bufferedConn is a connection whose first bytes were already read into r.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// trackingTransport wraps raft's NetworkTransport to observe, on the leader,
// each follower's AppendEntries responses: the follower's last log index and
// when it last answered, which hashicorp/raft keeps internal but
// DescribeQuorum reports (KIP-595's LogEndOffset, LastFetchTimestamp,
// LastCaughtUpTimestamp). Heartbeats are AppendEntries too, so the timestamps
// advance while the log is idle. Pipelined replication is disabled so every
// append goes through AppendEntries; metadata entries are few and small.
//
// Thread-safety: safe for concurrent use (raft replicates to each follower
// from its own goroutine).
type trackingTransport struct {
	*raft.NetworkTransport
	// leaderLastIndex returns the leader's last log index; nil until raft
	// is created.
	leaderLastIndex func() uint64

	mu struct {
		sync.Mutex
		replicas map[raft.ServerID]replicaProgress
	}
}

// replicaProgress is what the leader last learned about one follower.
type replicaProgress struct {
	lastIndex    uint64
	lastFetch    time.Time
	lastCaughtUp time.Time
}

func newTrackingTransport(nt *raft.NetworkTransport) *trackingTransport {
	t := &trackingTransport{NetworkTransport: nt}
	t.mu.replicas = map[raft.ServerID]replicaProgress{}
	return t
}

// AppendEntriesPipeline makes raft fall back to synchronous AppendEntries.
func (t *trackingTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// AppendEntries implements raft.Transport, recording the follower's answer.
func (t *trackingTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	var leaderLast uint64
	if f := t.leaderLastIndex; f != nil {
		leaderLast = f()
	}
	err := t.NetworkTransport.AppendEntries(id, target, args, resp)
	if err != nil {
		return err
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.mu.replicas[id]
	p.lastFetch = now
	p.lastIndex = resp.LastLog
	if resp.Success {
		if sent := args.PrevLogEntry + uint64(len(args.Entries)); sent > p.lastIndex {
			p.lastIndex = sent
		}
		// Caught up: the follower holds everything the leader had when the
		// request was sent (Kafka: fetch offset >= leader's end offset at
		// fetch time).
		if p.lastIndex >= leaderLast {
			p.lastCaughtUp = now
		}
	}
	t.mu.replicas[id] = p
	return nil
}

func (t *trackingTransport) progress(id raft.ServerID) (replicaProgress, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.mu.replicas[id]
	return p, ok
}

// resetProgress forgets what a previous leadership term learned, so a new
// leader reports only what it observed itself.
func (t *trackingTransport) resetProgress() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.mu.replicas)
}
