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
		cfg := s.TLS.Clone()
		if !s.checkHost {
			// franz-go sets ServerName from the host; the chain is
			// still verified by VerifyPeerCertificate.
			cfg.InsecureSkipVerify = true
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
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
