package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Listener is one endpoint of the listeners or advertised.listeners config,
// written NAME://host:port ("PLAINTEXT://127.0.0.1:9092", "EXTERNAL://[::1]:9093").
// An empty Host means all interfaces (for listeners) as in Kafka.
type Listener struct {
	Name             string // upper-cased, as Kafka's ListenerName.normalised
	Host             string // without IPv6 brackets
	Port             int
	SecurityProtocol string // from listener.security.protocol.map
}

// Addr is host:port suitable for net.Listen and net.Dial.
func (l Listener) Addr() string {
	if strings.Contains(l.Host, ":") {
		return "[" + l.Host + "]:" + strconv.Itoa(l.Port)
	}
	return l.Host + ":" + strconv.Itoa(l.Port)
}

// String renders the listener back in NAME://host:port form.
func (l Listener) String() string { return l.Name + "://" + l.Addr() }

// listenerRE is Kafka's endpoint syntax (SocketServerConfigs.URI_PARSE_REGEXP):
// a name, "://", an optional (possibly bracketed IPv6) host and a port.
var listenerRE = regexp.MustCompile(`^(.*)://\[?([0-9a-zA-Z\-%._:]*?)\]?:(-?[0-9]+)$`)

// parseListenerList parses a comma-separated endpoint list without resolving
// security protocols. Names must be unique, as Kafka requires.
func parseListenerList(v string) ([]Listener, error) {
	var out []Listener
	seen := map[string]bool{}
	for _, item := range splitList(v) {
		m := listenerRE.FindStringSubmatch(item)
		if m == nil || m[1] == "" {
			return nil, fmt.Errorf("%q is not a valid endpoint; expected NAME://host:port", item)
		}
		port, err := strconv.Atoi(m[3])
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("port in %q must be between 0 and 65535", item)
		}
		name := strings.ToUpper(m[1])
		if seen[name] {
			return nil, fmt.Errorf("each listener must have a different name; %s appears more than once", name)
		}
		seen[name] = true
		out = append(out, Listener{Name: name, Host: m[2], Port: port})
	}
	return out, nil
}

func validateListenerList(v string) string {
	if _, err := parseListenerList(v); err != nil {
		return err.Error()
	}
	return ""
}

// parseProtocolMap parses listener.security.protocol.map ("NAME:PROTOCOL,...").
func parseProtocolMap(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range splitList(v) {
		name, proto, ok := strings.Cut(item, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not a NAME:PROTOCOL pair", item)
		}
		if !contains(securityProtocols, proto) {
			return nil, fmt.Errorf("unknown security protocol %q for listener %s; must be one of %s", proto, name, strings.Join(securityProtocols, ", "))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("listener %s is mapped more than once", name)
		}
		out[name] = proto
	}
	return out, nil
}

func validateProtocolMap(v string) string {
	if _, err := parseProtocolMap(v); err != nil {
		return err.Error()
	}
	return ""
}

// Voter is one entry of controller.quorum.voters ("1@localhost:9093").
type Voter struct {
	ID   int32
	Host string
	Port int
}

var voterRE = regexp.MustCompile(`^(-?\d+)@\[?([^\[\]]*?)\]?:(\d+)$`)

// ParseVoters parses controller.quorum.voters.
func ParseVoters(v string) ([]Voter, error) {
	var out []Voter
	seen := map[int32]bool{}
	for _, item := range splitList(v) {
		m := voterRE.FindStringSubmatch(item)
		if m == nil {
			return nil, fmt.Errorf("%q is not a valid voter; expected id@host:port", item)
		}
		id, err := strconv.ParseInt(m[1], 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("voter id in %q must be a non-negative integer", item)
		}
		port, err := strconv.Atoi(m[3])
		if err != nil || port > 65535 {
			return nil, fmt.Errorf("port in %q must be between 0 and 65535", item)
		}
		if seen[int32(id)] {
			return nil, fmt.Errorf("voter id %d appears more than once", id)
		}
		seen[int32(id)] = true
		out = append(out, Voter{ID: int32(id), Host: m[2], Port: port})
	}
	return out, nil
}

func validateVoters(v string) string {
	if _, err := ParseVoters(v); err != nil {
		return err.Error()
	}
	return ""
}
