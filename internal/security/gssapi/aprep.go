package gssapi

import (
	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// apRep builds the GSS token carrying a KRB_AP_REP (RFC 4120 §5.5.2,
// RFC 4121 §4.1): the authenticator's time echoed under the session key,
// proving the broker holds the service key. It asserts no acceptor subkey,
// so both sides keep the initiator's subkey, and carries the sequence
// number the broker's wrap tokens use. gokrb5 builds only the client side
// of this message.
func (e *exchange) apRep(auth types.Authenticator) ([]byte, error) {
	part := messages.EncAPRepPart{CTime: auth.CTime, Cusec: auth.Cusec, SequenceNumber: int64(e.seq)}
	b, err := asn1.Marshal(part)
	if err != nil {
		return nil, err
	}
	b = asn1tools.AddASNAppTag(b, asnAppTag.EncAPRepPart)
	// The AP-REP is encrypted with the ticket's session key even when
	// the authenticator carries a subkey.
	enc, err := crypto.GetEncryptedData(b, e.sessionKey, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		return nil, err
	}
	rep := messages.APRep{PVNO: 5, MsgType: msgtype.KRB_AP_REP, EncPart: enc}
	rb, err := asn1.Marshal(rep)
	if err != nil {
		return nil, err
	}
	rb = asn1tools.AddASNAppTag(rb, asnAppTag.APREP)
	oid, err := asn1.Marshal(gssapi.OIDKRB5.OID())
	if err != nil {
		return nil, err
	}
	tok := append(oid, 0x02, 0x00) // TOK_ID of a KRB_AP_REP
	return asn1tools.AddASNAppTag(append(tok, rb...), 0), nil
}
