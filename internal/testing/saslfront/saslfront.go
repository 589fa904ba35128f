// Package saslfront is a minimal Kafka endpoint for testing SASL
// mechanisms with real clients (kcat, librdkafka, kafka-python) before any
// data flows: it answers ApiVersions, SaslHandshake (v0 with raw tokens, as
// kafka-python 2.0 sends them, and v1), SaslAuthenticate through a
// sasl.Mechanism, and, once authenticated, Metadata naming itself and no
// topics. A client that lists metadata has therefore authenticated.
package saslfront

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/sasl"
	"github.com/vltava/vltava/internal/testing/freeport"
)

// Front is a running endpoint.
type Front struct {
	Addr string
	mech sasl.Mechanism
	ln   net.Listener

	mu         sync.Mutex
	principals []security.Principal
	failures   []error
}

// Start listens on a loopback port until the test ends.
func Start(t testing.TB, mech sasl.Mechanism) *Front {
	t.Helper()
	ln, err := net.Listen("tcp", freeport.Addr(t))
	if err != nil {
		t.Fatal(err)
	}
	f := &Front{Addr: ln.Addr().String(), mech: mech, ln: ln}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(time.Minute))
				f.serve(c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return f
}

// Principals lists the principals authenticated so far.
func (f *Front) Principals() []security.Principal {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]security.Principal(nil), f.principals...)
}

// Failures lists the authentication failures so far.
func (f *Front) Failures() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.failures...)
}

func (f *Front) record(p security.Principal, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.failures = append(f.failures, err)
	} else {
		f.principals = append(f.principals, p)
	}
}

func (f *Front) serve(c net.Conn) {
	r := bufio.NewReader(c)
	host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
	var ex sasl.Exchange
	authenticated, raw := false, false
	for {
		frame, err := readFrame(r)
		if err != nil {
			return
		}
		if raw {
			// SaslHandshake v0: the tokens follow as bare frames.
			out, done, err := ex.Next(context.Background(), frame)
			if err != nil {
				f.record(security.Principal{}, err)
				return
			}
			// A nil token is no frame at all (the JDK's GSSAPI server
			// returns null at its last step, and Kafka then sends
			// nothing); an empty one is an empty frame.
			if out != nil {
				if err := writeFrame(c, out); err != nil {
					return
				}
			}
			if done {
				f.record(ex.Principal(), nil)
				raw, authenticated = false, true
			}
			continue
		}
		key, ver, corr, body, err := parseHeader(frame)
		if err != nil {
			return
		}
		req := kmsg.RequestForKey(key)
		if req == nil {
			return
		}
		req.SetVersion(ver)
		if key == 18 && ver > 3 {
			// ApiVersions newer than we know: answer v0 with
			// UNSUPPORTED_VERSION (KIP-511), the client retries lower.
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			resp.ApiKeys = apiKeys()
			_ = respond(c, 18, corr, resp)
			continue
		}
		if req.IsFlexible() {
			if body, err = skipTags(body); err != nil {
				return
			}
		}
		if err := req.ReadFrom(body); err != nil {
			return
		}
		var resp kmsg.Response
		switch q := req.(type) {
		case *kmsg.ApiVersionsRequest:
			a := q.ResponseKind().(*kmsg.ApiVersionsResponse)
			a.ApiKeys = apiKeys()
			resp = a
		case *kmsg.SASLHandshakeRequest:
			h := q.ResponseKind().(*kmsg.SASLHandshakeResponse)
			h.SupportedMechanisms = []string{f.mech.Name()}
			if q.Mechanism != f.mech.Name() {
				h.ErrorCode = kerr.UnsupportedSaslMechanism.Code
			} else if ex, err = f.mech.Start(sasl.ConnInfo{Listener: "SASL_PLAINTEXT", RemoteHost: host}); err != nil {
				return
			}
			raw = ver == 0 && h.ErrorCode == 0
			resp = h
		case *kmsg.SASLAuthenticateRequest:
			a := q.ResponseKind().(*kmsg.SASLAuthenticateResponse)
			if ex == nil {
				return
			}
			out, done, err := ex.Next(context.Background(), q.SASLAuthBytes)
			switch {
			case errors.Is(err, sasl.ErrAuthentication):
				f.record(security.Principal{}, err)
				a.ErrorCode = kerr.SaslAuthenticationFailed.Code
				msg := err.Error()
				a.ErrorMessage = &msg
			case err != nil:
				f.record(security.Principal{}, err)
				return
			default:
				a.SASLAuthBytes = out
				if done {
					authenticated = true
					f.record(ex.Principal(), nil)
					a.SessionLifetimeMillis = ex.Lifetime().Milliseconds()
				}
			}
			resp = a
		case *kmsg.MetadataRequest:
			if !authenticated {
				return // Kafka closes a connection that skips authentication
			}
			m := q.ResponseKind().(*kmsg.MetadataResponse)
			h, p, _ := net.SplitHostPort(f.Addr)
			port, _ := strconv.Atoi(p)
			m.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: h, Port: int32(port)}}
			m.ControllerID = 1
			m.ClusterID = kmsg.StringPtr("saslfront")
			for _, t := range q.Topics {
				mt := kmsg.NewMetadataResponseTopic()
				mt.Topic, mt.ErrorCode = t.Topic, kerr.UnknownTopicOrPartition.Code
				m.Topics = append(m.Topics, mt)
			}
			resp = m
		default:
			return
		}
		if err := respond(c, key, corr, resp); err != nil {
			return
		}
		if a, ok := resp.(*kmsg.SASLAuthenticateResponse); ok && a.ErrorCode != 0 {
			return // Kafka closes the connection after a failed authentication
		}
	}
}

func apiKeys() []kmsg.ApiVersionsResponseApiKey {
	return []kmsg.ApiVersionsResponseApiKey{
		{ApiKey: 3, MinVersion: 0, MaxVersion: 9},
		// Advertised, never served: librdkafka infers GSSAPI support
		// from JoinGroup, which shipped with SASL in Kafka 0.9.
		{ApiKey: 11, MinVersion: 0, MaxVersion: 5},
		{ApiKey: 17, MinVersion: 0, MaxVersion: 1},
		{ApiKey: 18, MinVersion: 0, MaxVersion: 3},
		{ApiKey: 36, MinVersion: 0, MaxVersion: 2},
	}
}

func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 1<<20 {
		return nil, errors.New("frame too large")
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

func writeFrame(w io.Writer, b []byte) error {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
	_, err := w.Write(append(out, b...))
	return err
}

// parseHeader reads a request header v1 (key, version, correlation id,
// client id); flexible requests' tags are skipped by the caller.
func parseHeader(b []byte) (key, ver int16, corr int32, body []byte, err error) {
	if len(b) < 10 {
		return 0, 0, 0, nil, errors.New("short header")
	}
	key = int16(binary.BigEndian.Uint16(b))
	ver = int16(binary.BigEndian.Uint16(b[2:]))
	corr = int32(binary.BigEndian.Uint32(b[4:]))
	n := int16(binary.BigEndian.Uint16(b[8:]))
	rest := b[10:]
	if n > 0 {
		if int(n) > len(rest) {
			return 0, 0, 0, nil, errors.New("short client id")
		}
		rest = rest[n:]
	}
	return key, ver, corr, rest, nil
}

func skipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, errors.New("bad tags")
	}
	b = b[n:]
	for range count {
		_, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < size {
			return nil, errors.New("bad tag size")
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// respond writes a response: header v0, or v1 (tags) for flexible
// responses other than ApiVersions, which always uses v0.
func respond(w io.Writer, key int16, corr int32, resp kmsg.Response) error {
	out := binary.BigEndian.AppendUint32(nil, uint32(corr))
	if resp.IsFlexible() && key != 18 {
		out = append(out, 0)
	}
	return writeFrame(w, resp.AppendTo(out))
}
