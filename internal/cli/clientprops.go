package cli

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vltava/vltava/internal/security/clientauth"
	"github.com/vltava/vltava/internal/security/tlsconf"
)

// clientProps are the Kafka client properties (--command-config) the
// commands honour. The file uses Java properties syntax: key=value or
// key: value, '#' and '!' start comments.
type clientProps struct {
	// bootstrap is bootstrap.servers, used when neither
	// --bootstrap-server nor $VLTAVA_BOOTSTRAP is given.
	bootstrap      string
	clientID       string
	requestTimeout time.Duration // request.timeout.ms
	dialTimeout    time.Duration // socket.connection.setup.timeout.ms
	// security holds security.protocol, ssl.*, sasl.mechanism,
	// sasl.jaas.config and the OAUTHBEARER and GSSAPI client keys
	// (saslExtKeys), read by clientauth when the command connects.
	security map[string]string
}

func defaultClientProps() clientProps {
	return clientProps{
		clientID:       "vltava-cli",
		requestTimeout: 30 * time.Second, // Kafka's request.timeout.ms default
		dialTimeout:    3 * time.Second,
	}
}

// securityTLSKeys are the ssl.* client properties honoured (tlsconf).
var securityTLSKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range tlsconf.Keys {
		m[k] = true
	}
	delete(m, "ssl.client.auth")             // a broker setting
	delete(m, "ssl.principal.mapping.rules") // likewise
	return m
}()

// security builds the connection's TLS and SASL from the properties.
func (p *clientProps) securitySettings() (*clientauth.Security, error) {
	lookup := func(k string) (string, bool) { v, ok := p.security[k]; return v, ok }
	s, err := clientauth.New(lookup, "", "")
	if err != nil {
		return nil, fmt.Errorf("--command-config: %w", err)
	}
	return s, nil
}

// ignoredClientProps are accepted without effect: they tune behaviour the
// commands do not expose or franz-go manages itself, and Kafka tool users
// commonly carry them in their property files.
var ignoredClientProps = map[string]bool{
	"retries": true, "retry.backoff.ms": true, "metadata.max.age.ms": true,
	"default.api.timeout.ms": true, "connections.max.idle.ms": true,
	"reconnect.backoff.ms": true, "reconnect.backoff.max.ms": true,
	"client.dns.lookup": true, "socket.connection.setup.timeout.max.ms": true,
	"send.buffer.bytes": true, "receive.buffer.bytes": true,
}

// loadClientProps reads a --command-config file. The security settings
// (security.protocol, ssl.*, sasl.mechanism, sasl.jaas.config) are
// honoured; SASL settings of mechanisms the CLI cannot speak are refused, so
// that a user never believes a connection is authenticated when it is
// not; other unknown keys produce warnings, as Kafka's clients log
// "supplied but isn't a known config".
func loadClientProps(path string) (clientProps, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return clientProps{}, nil, fmt.Errorf("--command-config: %w", err)
	}
	defer f.Close()
	kvs, err := parseProperties(bufio.NewScanner(f))
	if err != nil {
		return clientProps{}, nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	p, warnings, err := applyClientProps(kvs)
	if err != nil {
		return clientProps{}, nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	return p, warnings, nil
}

// parseProperties parses Java-properties lines (without line
// continuations or escapes, which client configs do not need).
func parseProperties(sc *bufio.Scanner) ([][2]string, error) {
	var out [][2]string
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			return nil, fmt.Errorf("line %d: expected key=value, got %q", n, line)
		}
		out = append(out, [2]string{strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:])})
	}
	return out, sc.Err()
}

// applyClientProps turns parsed properties into clientProps.
func applyClientProps(kvs [][2]string) (clientProps, []string, error) {
	p := defaultClientProps()
	var warnings []string
	for _, kv := range kvs {
		if err := p.setOrWarn(kv[0], kv[1], &warnings); err != nil {
			return p, nil, err
		}
	}
	return p, warnings, nil
}

// unknownPropWarning is Kafka's clients' "supplied but isn't a known
// config" log line.
func unknownPropWarning(k string) string {
	return fmt.Sprintf("the configuration %s was supplied but is not a known client config; ignored", k)
}

// setOrWarn applies one client property, adding the unknown-key warning
// to warnings for a key that is no client setting.
func (p *clientProps) setOrWarn(k, v string, warnings *[]string) error {
	known, err := p.set(k, v)
	if err == nil && !known {
		*warnings = append(*warnings, unknownPropWarning(k))
	}
	return err
}

// set applies one client property, reporting whether the key is a client
// setting at all (known keys the commands do not need are accepted).
func (p *clientProps) set(k, v string) (bool, error) {
	switch {
	case k == "client.id":
		p.clientID = v
	case k == "request.timeout.ms", k == "socket.connection.setup.timeout.ms":
		ms, err := strconv.ParseInt(v, 10, 32)
		if err != nil || ms <= 0 {
			return true, fmt.Errorf("%s=%q: want a positive number of milliseconds", k, v)
		}
		if k == "request.timeout.ms" {
			p.requestTimeout = time.Duration(ms) * time.Millisecond
		} else {
			p.dialTimeout = time.Duration(ms) * time.Millisecond
		}
	case k == "bootstrap.servers":
		// Used unless --bootstrap-server (or the environment) names the
		// cluster: Kafka's tools let the flag win over the file.
		p.bootstrap = v
	case k == "security.protocol", k == "sasl.mechanism", k == "sasl.jaas.config", securityTLSKeys[k], saslExtKeys[k]:
		if p.security == nil {
			p.security = map[string]string{}
		}
		p.security[k] = v
	case strings.HasPrefix(k, "sasl."), strings.HasPrefix(k, "ssl."):
		return true, fmt.Errorf("%s: this TLS or SASL client setting is not supported by the vltava CLI", k)
	case ignoredClientProps[k]:
	default:
		return false, nil
	}
	return true, nil
}
