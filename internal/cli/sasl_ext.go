package cli

import (
	"github.com/vltava/vltava/internal/security/gssapi"
	"github.com/vltava/vltava/internal/security/oauthbearer"
)

// saslExtKeys are the client properties clientauth reads for OAUTHBEARER
// and GSSAPI, sasl.mechanism included.
var saslExtKeys = func() map[string]bool {
	keys := map[string]bool{"sasl.mechanism": true}
	for _, k := range append(append([]string(nil), oauthbearer.ClientKeys...), gssapi.ClientKeys...) {
		keys[k] = true
	}
	return keys
}()
