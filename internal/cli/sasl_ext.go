package cli

import (
	"fmt"
	"strings"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/vltava/vltava/internal/security/gssapi"
	"github.com/vltava/vltava/internal/security/oauthbearer"
)

// saslExtKeys are the client properties saslMechanismFromProps reads for
// OAUTHBEARER and GSSAPI, sasl.mechanism included.
var saslExtKeys = func() map[string]bool {
	keys := map[string]bool{"sasl.mechanism": true}
	for _, k := range append(append([]string(nil), oauthbearer.ClientKeys...), gssapi.ClientKeys...) {
		keys[k] = true
	}
	return keys
}()

// saslMechanismFromProps builds the client mechanism for
// sasl.mechanism=OAUTHBEARER or GSSAPI from Kafka's client properties
// (oauthbearer.NewClient, gssapi.NewClient). ok is false for any other
// mechanism (PLAIN and SCRAM are built elsewhere).
func saslMechanismFromProps(props map[string]string) (kgosasl.Mechanism, bool, error) {
	lookup := func(k string) (string, bool) { v, ok := props[k]; return v, ok }
	var (
		m   kgosasl.Mechanism
		err error
	)
	switch strings.ToUpper(strings.TrimSpace(props["sasl.mechanism"])) {
	case "OAUTHBEARER":
		m, err = oauthbearer.NewClient(lookup)
	case "GSSAPI":
		m, err = gssapi.NewClient(lookup)
	default:
		return nil, false, nil
	}
	if err != nil {
		return nil, true, fmt.Errorf("sasl.mechanism=%s: %w", props["sasl.mechanism"], err)
	}
	return m, true, nil
}
