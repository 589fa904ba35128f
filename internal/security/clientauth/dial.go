package clientauth

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Conn is an established, authenticated connection.
type Conn struct {
	net.Conn
	// Raw is the TCP connection under TLS (Conn itself without TLS), for
	// socket options.
	Raw net.Conn
	// Expires is when the SASL session ends (KIP-368), zero for none: the
	// owner reconnects before it.
	Expires time.Time
}

// Expired reports whether the session is (nearly) over: past 90% of its
// lifetime, the margin Kafka's clients re-authenticate in.
func (c *Conn) Expired() bool { return !c.Expires.IsZero() && time.Now().After(c.Expires) }

// Dial connects to addr: TCP, the TLS handshake, then preamble (the quorum
// port's routing byte, the first byte inside TLS), and the SASL exchange,
// all within timeout.
func (s *Security) Dial(ctx context.Context, addr, clientID string, preamble []byte, timeout time.Duration) (*Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := net.Dialer{}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			raw.Close()
		}
	}()
	deadline, _ := ctx.Deadline()
	raw.SetDeadline(deadline)
	c := &Conn{Conn: raw, Raw: raw}
	if s.TLS != nil {
		tc := tls.Client(raw, s.TLSFor(addr))
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		c.Conn = tc
	}
	if len(preamble) > 0 {
		if _, err := c.Conn.Write(preamble); err != nil {
			return nil, err
		}
	}
	if s.Mechanism != "" {
		life, err := s.authenticate(ctx, c.Conn, addr, clientID)
		if err != nil {
			return nil, fmt.Errorf("SASL %s with %s: %w", s.Mechanism, addr, err)
		}
		if life > 0 {
			c.Expires = time.Now().Add(life * 9 / 10)
		}
	}
	c.Conn.SetDeadline(time.Time{})
	ok = true
	return c, nil
}

// authenticate runs SaslHandshake v1 and the SaslAuthenticate v1 exchange
// and returns the session lifetime.
func (s *Security) authenticate(ctx context.Context, c net.Conn, addr, clientID string) (time.Duration, error) {
	rt := &roundTripper{c: c, r: bufio.NewReader(c), f: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = s.Mechanism
	hsResp := kmsg.NewPtrSASLHandshakeResponse()
	if err := rt.do(hs, hsResp); err != nil {
		return 0, err
	}
	if err := kerr.ErrorForCode(hsResp.ErrorCode); err != nil {
		return 0, fmt.Errorf("SaslHandshake: %w (enabled: %v)", err, hsResp.SupportedMechanisms)
	}
	sess, out, err := s.mechanism().Authenticate(ctx, addr)
	if err != nil {
		return 0, err
	}
	// As kgo: write while the session is not done or has a last message
	// to send; the server's answer to that last message ends it.
	var life time.Duration
	for done := false; !done || len(out) > 0; {
		au := kmsg.NewPtrSASLAuthenticateRequest()
		au.SetVersion(1)
		au.SASLAuthBytes = out
		auResp := kmsg.NewPtrSASLAuthenticateResponse()
		if err := rt.do(au, auResp); err != nil {
			return 0, err
		}
		if err := kerr.ErrorForCode(auResp.ErrorCode); err != nil {
			msg := ""
			if auResp.ErrorMessage != nil {
				msg = *auResp.ErrorMessage
			}
			return 0, fmt.Errorf("%w: %s", err, msg)
		}
		life = time.Duration(auResp.SessionLifetimeMillis) * time.Millisecond
		out = nil
		if !done {
			// The session checks the server's messages, its final
			// one included (SCRAM's signature, GSSAPI's layers).
			if done, out, err = sess.Challenge(auResp.SASLAuthBytes); err != nil {
				return 0, err
			}
		}
	}
	return life, nil
}

// roundTripper sends one request at a time on a connection being set up.
type roundTripper struct {
	c    net.Conn
	r    *bufio.Reader
	f    *kmsg.RequestFormatter
	corr int32
}

func (rt *roundTripper) do(req kmsg.Request, resp kmsg.Response) error {
	rt.corr++
	if _, err := rt.c.Write(rt.f.AppendRequest(nil, req, rt.corr)); err != nil {
		return err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(rt.r, hdr[:]); err != nil {
		return err
	}
	size := int32(binary.BigEndian.Uint32(hdr[:4]))
	if size < 4 || size > 1<<20 {
		return fmt.Errorf("response of %d bytes", size)
	}
	if corr := int32(binary.BigEndian.Uint32(hdr[4:])); corr != rt.corr {
		return fmt.Errorf("correlation id %d, want %d", corr, rt.corr)
	}
	body := make([]byte, size-4)
	if _, err := io.ReadFull(rt.r, body); err != nil {
		return err
	}
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() {
		if len(body) == 0 || body[0] != 0 {
			return errors.New("unexpected response header tags")
		}
		body = body[1:]
	}
	return resp.ReadFrom(body)
}
