package gssapi

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/vltava/vltava/internal/security/sasl"
)

// FuzzGSSAPIExchange feeds arbitrary client tokens to an exchange.
// Invariants: no panic, no success without a valid ticket, and every
// refusal is an authentication failure (SASL_AUTHENTICATION_FAILED for the
// client), never another error.
func FuzzGSSAPIExchange(f *testing.F) {
	kt := keytab.New()
	if err := kt.AddEntry("kafka/127.0.0.1", "VLTAVA.TEST", "fuzz", time.Unix(0, 0), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		f.Fatal(err)
	}
	namer, err := NewShortNamer("VLTAVA.TEST", nil)
	if err != nil {
		f.Fatal(err)
	}
	m := &Mechanism{keytab: kt, service: KerberosName{Service: "kafka", Host: "127.0.0.1", Realm: "VLTAVA.TEST"},
		serviceName: "kafka", namer: namer}
	f.Add([]byte{0x60, 0x0b, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02}, []byte{})
	f.Add([]byte{0x60, 0x80, 0x06}, []byte{0x05, 0x04, 0x00, 0xff})
	f.Fuzz(func(t *testing.T, first, second []byte) {
		ex, _ := m.Start(sasl.ConnInfo{RemoteHost: "127.0.0.1"})
		for _, tok := range [][]byte{first, second} {
			_, done, err := ex.Next(context.Background(), tok)
			if done {
				t.Fatalf("authenticated by %x %x", first, second)
			}
			if err != nil {
				if !errors.Is(err, sasl.ErrAuthentication) {
					t.Fatalf("error %v is not an authentication failure", err)
				}
				return
			}
		}
	})
}
