package clientauth

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	xscram "github.com/xdg-go/scram"
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
		life, err := s.authenticate(c.Conn, clientID)
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
func (s *Security) authenticate(c net.Conn, clientID string) (time.Duration, error) {
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
	step, err := s.steps()
	if err != nil {
		return 0, err
	}
	var in []byte
	for {
		out, done, err := step(in)
		if err != nil {
			return 0, err
		}
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
		in = auResp.SASLAuthBytes
		if done {
			if _, _, err := step(in); err != nil { // verify the server's final message
				return 0, err
			}
			return time.Duration(auResp.SessionLifetimeMillis) * time.Millisecond, nil
		}
	}
}

// steps returns the client side of the mechanism: each call takes the
// server's last token and returns the next client token, done marking the
// last one; after done, one more call checks the server's final token.
func (s *Security) steps() (func([]byte) ([]byte, bool, error), error) {
	switch s.Mechanism {
	case "PLAIN":
		sent := false
		return func([]byte) ([]byte, bool, error) {
			if sent {
				return nil, true, nil
			}
			sent = true
			return []byte("\x00" + s.Username + "\x00" + s.Password), true, nil
		}, nil
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		gen := xscram.HashGeneratorFcn(sha256.New)
		if s.Mechanism == "SCRAM-SHA-512" {
			gen = sha512.New
		}
		client, err := gen.NewClient(s.Username, s.Password, "")
		if err != nil {
			return nil, err
		}
		conv := client.NewConversation()
		n := 0
		return func(in []byte) ([]byte, bool, error) {
			n++
			out, err := conv.Step(string(in))
			if err != nil {
				return nil, false, err
			}
			return []byte(out), n == 2, nil
		}, nil
	}
	return nil, fmt.Errorf("unsupported mechanism %s", s.Mechanism)
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
