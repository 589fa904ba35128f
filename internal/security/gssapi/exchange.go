package gssapi

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/spnego"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/sasl"
)

// exchange is one SASL GSSAPI authentication (RFC 4752 §3.1):
//
//	C: GSS initial context token (the AP-REQ)
//	S: AP-REP, if the client asked for mutual authentication   (stage awaitAck)
//	C: an empty token                                           ...
//	S: wrap(layers offered, max buffer)                         (stage awaitLayer)
//	C: wrap(layer chosen, max buffer, authzid)
//	S: success
//
// The AP-REQ is checked by gokrb5 (ticket decrypted with the keytab,
// authenticator, clock skew, replay cache).
type exchange struct {
	m          *Mechanism
	remoteHost string
	stage      stage
	key        types.EncryptionKey // the context key: the initiator's subkey, else the session key
	sessionKey types.EncryptionKey // the ticket's session key, which the AP-REP is encrypted with
	seq        uint64              // the acceptor's sequence number (RFC 4121 §4.2.6)
	principal  security.Principal
}

type stage int8

const (
	awaitAPReq stage = iota
	awaitAck
	awaitLayer
	complete
)

// The security layers of RFC 4752 §3.3; only "none" is offered, as Kafka
// (whose broker leaves javax.security.sasl.qop at "auth").
const (
	layerNone = 0x01
	// maxBuffer is what the JDK's GSS server announces (65536); it
	// bounds wrapped messages, of which there are none without a layer.
	maxBuffer = 65536
)

// authError is a failed authentication. Kafka answers every GSSAPI
// failure with one message, so the reason stays in the broker's log and
// never tells a client whether a principal exists.
type authError struct{ reason string }

func (e *authError) Error() string {
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism GSSAPI"
}
func (e *authError) Is(target error) bool { return target == sasl.ErrAuthentication }

// Reason is the cause, for the broker's log.
func (e *authError) Reason() string { return e.reason }

func fail(format string, args ...any) error { return &authError{reason: fmt.Sprintf(format, args...)} }

func (e *exchange) Next(_ context.Context, client []byte) ([]byte, bool, error) {
	switch e.stage {
	case awaitAPReq:
		return e.acceptContext(client)
	case awaitAck:
		// The client's answer to the AP-REP carries nothing (its
		// context is established); the layer negotiation follows.
		out, err := e.layerOffer()
		if err != nil {
			return nil, false, err
		}
		e.stage = awaitLayer
		return out, false, nil
	case awaitLayer:
		if err := e.layerChoice(client); err != nil {
			e.stage = complete
			return nil, false, err
		}
		e.stage = complete
		// nil, not empty: the JDK's GSSAPI server has nothing to send
		// after the layer choice, and with SaslHandshake v0 (raw
		// tokens, kafka-python 2.0) Kafka then sends no frame at all;
		// a client reading one would take it for its next response.
		return nil, true, nil
	}
	return nil, false, fail("GSSAPI exchange already complete")
}

func (e *exchange) acceptContext(client []byte) ([]byte, bool, error) {
	var tok spnego.KRB5Token
	if err := tok.Unmarshal(client); err != nil {
		return nil, false, fail("initial token: %v", err)
	}
	if !tok.IsAPReq() {
		return nil, false, fail("initial token is not an AP-REQ")
	}
	apReq := tok.APReq
	// The ticket's server name is in the clear: refuse a ticket for
	// another service before trying to decrypt it.
	sname := apReq.Ticket.SName.NameString
	if len(sname) == 0 || sname[0] != e.m.serviceName {
		return nil, false, fail("ticket is for %s, not service %s", apReq.Ticket.SName.PrincipalNameString(), e.m.serviceName)
	}
	if !e.m.anyHost && (apReq.Ticket.Realm != e.m.service.Realm || !slices.Equal(sname, []string{e.m.service.Service, e.m.service.Host})) {
		return nil, false, fail("ticket is for %s@%s, not %s", apReq.Ticket.SName.PrincipalNameString(), apReq.Ticket.Realm, e.m.service)
	}
	opts := []func(*service.Settings){service.DecodePAC(false)}
	if ip := net.ParseIP(e.remoteHost); ip != nil {
		opts = append(opts, service.ClientAddress(types.HostAddressFromNetIP(ip)))
	}
	ok, _, err := service.VerifyAPREQ(&apReq, service.NewSettings(e.m.keytab, opts...))
	if err != nil || !ok {
		return nil, false, fail("AP-REQ refused: %v", err)
	}
	auth := apReq.Authenticator
	e.sessionKey = apReq.Ticket.DecryptedEncPart.Key
	e.key = e.sessionKey
	if auth.SubKey.KeyType != 0 && len(auth.SubKey.KeyValue) > 0 {
		e.key = auth.SubKey
	}
	// Without an acceptor subkey or sequence number of our own, the
	// acceptor's sequence numbers start at the initiator's, as MIT's and
	// the JDK's acceptors do for a context without mutual authentication.
	e.seq = uint64(auth.SeqNumber)

	clientName := KerberosName{Realm: auth.CRealm}
	switch n := auth.CName.NameString; len(n) {
	case 1:
		clientName.Service = n[0]
	case 2:
		clientName.Service, clientName.Host = n[0], n[1]
	default:
		return nil, false, fail("client principal %s has %d components", auth.CName.PrincipalNameString(), len(n))
	}
	short, err := e.m.namer.ShortName(clientName)
	if err != nil {
		return nil, false, fail("principal %s: %v", clientName, err)
	}
	e.principal = security.User(short)

	if mutualRequested(apReq) {
		out, err := e.apRep(auth)
		if err != nil {
			return nil, false, fail("AP-REP: %v", err)
		}
		e.stage = awaitAck
		return out, false, nil
	}
	out, err := e.layerOffer()
	if err != nil {
		return nil, false, err
	}
	e.stage = awaitLayer
	return out, false, nil
}

// mutualRequested: the AP-REQ's mutual-required option, or the GSS
// checksum's GSS_C_MUTUAL_FLAG (RFC 4121 §4.1.1).
func mutualRequested(r messages.APReq) bool {
	if types.IsFlagSet(&r.APOptions, flags.APOptionMutualRequired) {
		return true
	}
	c := r.Authenticator.Cksum
	return c.CksumType == 0x8003 && len(c.Checksum) >= 24 &&
		binary.LittleEndian.Uint32(c.Checksum[20:24])&uint32(gssapi.ContextFlagMutual) != 0
}

// layerOffer is the server's wrap token offering the security layers
// and its maximum buffer size (RFC 4752 §3.1).
func (e *exchange) layerOffer() ([]byte, error) {
	payload := binary.BigEndian.AppendUint32(nil, layerNone<<24|maxBuffer)
	et, err := crypto.GetEtype(e.key.KeyType)
	if err != nil {
		return nil, fail("context key: %v", err)
	}
	wt := gssapi.WrapToken{Flags: 0x01, // sent by the acceptor, not sealed
		EC: uint16(et.GetHMACBitLength() / 8), SndSeqNum: e.seq, Payload: payload}
	if err := wt.SetCheckSum(e.key, keyusage.GSSAPI_ACCEPTOR_SEAL); err != nil {
		return nil, fail("wrap: %v", err)
	}
	return wt.Marshal()
}

// layerChoice checks the client's wrap token: integrity intact, and "no
// security layer" chosen. The authorization id it may carry is not used:
// Kafka authorizes as the authenticated principal.
func (e *exchange) layerChoice(b []byte) error {
	var wt gssapi.WrapToken
	if err := wt.Unmarshal(b, false); err != nil {
		return fail("layer choice: %v", err)
	}
	if wt.Flags&0x02 != 0 {
		return fail("layer choice is sealed; no confidentiality layer was negotiated")
	}
	if wt.RRC != 0 {
		return fail("layer choice has a rotated token (RRC %d)", wt.RRC)
	}
	if ok, err := wt.Verify(e.key, keyusage.GSSAPI_INITIATOR_SEAL); !ok {
		return fail("layer choice: %v", err)
	}
	if len(wt.Payload) < 4 {
		return fail("layer choice is %d bytes, want at least 4", len(wt.Payload))
	}
	if wt.Payload[0] != layerNone {
		return fail("client chose security layer %#x; only none (1) is offered", wt.Payload[0])
	}
	return nil
}

func (e *exchange) Principal() security.Principal { return e.principal }

// Lifetime is 0: as in Kafka, a GSSAPI session is bounded by
// connections.max.reauth.ms alone, not by the ticket's end time.
func (e *exchange) Lifetime() time.Duration { return 0 }
