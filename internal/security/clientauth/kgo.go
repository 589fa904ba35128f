package clientauth

import (
	"github.com/twmb/franz-go/pkg/kgo"
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
	var opts []kgo.Opt
	switch s.Mechanism {
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()))
	}
	return opts
}
