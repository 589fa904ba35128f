package clientauth

import (
	"github.com/twmb/franz-go/pkg/kgo"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// KgoOpts are franz-go client options for these settings.
func (s *Security) KgoOpts() []kgo.Opt {
	var opts []kgo.Opt
	if s.TLS != nil {
		opts = append(opts, s.kgoTLS())
	}
	return append(opts, s.KgoSASLOpts()...)
}

// kgoTLS is the TLS option.
func (s *Security) kgoTLS() kgo.Opt {
	{
		cfg := s.TLS.Clone()
		if !s.checkHost {
			// franz-go sets ServerName from the host; the chain is
			// still verified by VerifyPeerCertificate.
			cfg.InsecureSkipVerify = true
		}
		return kgo.DialTLSConfig(cfg)
	}
}

// KgoSASLOpts is the SASL option alone (for a client with a dialer of its
// own, which does the TLS: TLSFor).
func (s *Security) KgoSASLOpts() []kgo.Opt {
	if s.Mechanism == "" {
		return nil
	}
	return []kgo.Opt{kgo.SASL(s.mechanism())}
}

// mechanism is the client side of the SASL mechanism, franz-go's: the
// connections Vltava dials itself (Dial) run it as kgo does.
func (s *Security) mechanism() kgosasl.Mechanism {
	switch s.Mechanism {
	case "PLAIN":
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: s.Username, Pass: s.Password, IsToken: s.Token}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: s.Username, Pass: s.Password, IsToken: s.Token}.AsSha512Mechanism()
	}
	// OAUTHBEARER and GSSAPI, built by New.
	if s.mech == nil {
		panic("clientauth: no client mechanism for " + s.Mechanism)
	}
	return s.mech
}
