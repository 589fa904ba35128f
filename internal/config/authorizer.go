package config

import (
	"fmt"
	"strings"
)

// The authorizer.class.name values Vltava serves: KRaft's StandardAuthorizer
// and the ZooKeeper-era AclAuthorizer, whose ACL semantics are the same
// (internal/security/acl); both keep ACLs in the metadata log here.
var authorizerClasses = []string{
	"org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"kafka.security.authorizer.AclAuthorizer",
}

func validateAuthorizerClass(v string) string {
	v = strings.TrimSpace(v)
	if v == "" || contains(authorizerClasses, v) {
		return ""
	}
	return fmt.Sprintf("%s; only %s are served", whyPlugin, strings.Join(authorizerClasses, " and "))
}

// validateSuperUsers checks super.users is a semicolon-separated list of
// Type:Name principals (Kafka splits it on ';' since a name may hold commas).
func validateSuperUsers(v string) string {
	for _, p := range splitSuperUsers(v) {
		if typ, _, ok := strings.Cut(p, ":"); !ok || typ == "" {
			return fmt.Sprintf("principal %q is not of the form Type:Name", p)
		}
	}
	return ""
}

func splitSuperUsers(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// AuthorizerEnabled reports whether authorizer.class.name selects the ACL
// authorizer.
func (b *Broker) AuthorizerEnabled() bool { return b.AuthorizerClassName != "" }

// fillAuthorizer reads the authorizer keys. early.start.listeners must name
// listeners of this node, and defaults to the controller listeners, as
// Kafka's KafkaConfig.earlyStartListeners.
func (b *Broker) fillAuthorizer() error {
	p := b.Raw
	str := func(n string) string { v, _ := get(p, n); return v }
	b.AuthorizerClassName = strings.TrimSpace(str("authorizer.class.name"))
	b.SuperUsers = splitSuperUsers(str("super.users"))
	b.AllowEveryoneIfNoACLFound = parseBool(str("allow.everyone.if.no.acl.found"))
	b.DelegationTokenSecretKey = str("delegation.token.secret.key")
	b.DelegationTokenMasterKey = str("delegation.token.master.key")
	b.DelegationTokenMaxLifetimeMs = parseInt(str("delegation.token.max.lifetime.ms"))
	b.DelegationTokenExpiryTimeMs = parseInt(str("delegation.token.expiry.time.ms"))
	b.DelegationTokenExpiryCheckIntervalMs = parseInt(str("delegation.token.expiry.check.interval.ms"))
	if v, set := p["early.start.listeners"]; set {
		b.EarlyStartListeners = upperAll(splitList(v))
		for _, name := range b.EarlyStartListeners {
			found := false
			for _, l := range b.Listeners {
				found = found || l.Name == name
			}
			if !found {
				return b.invalid("early.start.listeners", fmt.Sprintf("listener %s is not defined in listeners", name))
			}
		}
	} else {
		b.EarlyStartListeners = append([]string(nil), b.ControllerListenerNames...)
	}
	return nil
}
