package broker

// Authorization: the one place handlers ask whether a request's principal
// may act on a resource (Kafka's KafkaApis.authHelper). With no
// authorizer.class.name every check is true and costs a nil test.
//
// Kafka's table ("Operations and Resources on Protocols") decides which
// check each API makes and the error a refusal gets; each handler calls
// one of the helpers below, so adding a check to a handler is one line:
//
//	if !b.allowedCluster(r, acl.OpAlter) { ... CLUSTER_AUTHORIZATION_FAILED }
//	if !b.allowed(r, acl.ResourceTopic, name, acl.OpWrite) { ... TOPIC_AUTHORIZATION_FAILED }
//
// Requests on the quorum port (ControllerHandler) are authorized with the
// quorum connection's principal, as Kafka's controller does; forwarded
// admin requests arrive in an Envelope with the client's principal
// (authorize_envelope.go). In-process requests (no connection) are
// answered without checks.

import (
	"net"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

// controlPlanePrincipal is the principal of requests on the quorum port.
// Its type is not one any authenticator yields ("User"), so no client can
// act as it.
var controlPlanePrincipal = security.Principal{Type: "VltavaControlPlane", Name: "controller-channel"}

// newAuthorizer builds the authorizer authorizer.class.name selects, or nil.
func newAuthorizer(o Options) *acl.Authorizer {
	if o.Config.AuthorizerClassName == "" {
		return nil
	}
	var supers []security.Principal
	for _, s := range o.Config.SuperUsers {
		p, err := security.ParsePrincipal(s) // validated by internal/config
		if err == nil {
			supers = append(supers, p)
		}
	}
	warnAnonymousReplication(o, supers)
	return acl.New(acl.Config{
		SuperUsers:                supers,
		AllowEveryoneIfNoACLFound: o.Config.AllowEveryoneIfNoACLFound,
		Ready:                     o.Ready,
	}, o.Meta.Image)
}

// warnAnonymousReplication logs, at start, what a PLAINTEXT inter-broker
// listener implies: followers fetch as User:ANONYMOUS, and so do the
// transaction coordinator's WriteTxnMarkers and the partition leaders'
// AddPartitionsToTxn v4+ (KIP-890 verification); each needs
// CLUSTER_ACTION on the cluster (Kafka's rule), so without that principal
// among the super users, or an ACL granting it, or
// allow.everyone.if.no.acl.found with no cluster ACLs, replication and
// transactions are refused. The controller listener's exposure is
// warnControllerExposure's.
func warnAnonymousReplication(o Options, supers []security.Principal) {
	warnControllerExposure(o, supers)
	if o.Config.AllowEveryoneIfNoACLFound || slices.Contains(supers, security.Anonymous) {
		return
	}
	name := interBrokerListener(o.Config)
	for _, l := range o.Config.Listeners {
		if l.Name == name && l.SecurityProtocol == "PLAINTEXT" {
			if o.Logger != nil {
				o.Logger.Warn("the inter-broker listener is PLAINTEXT, so follower fetches, transaction markers and transaction verification act as User:ANONYMOUS and need CLUSTER_ACTION on the cluster: add it to super.users or grant it with an ACL",
					"listener", name)
			}
			break
		}
	}
}

// warnControllerExposure logs, at start, what the controller listener
// leaves unauthenticated while an authorizer is on. Over PLAINTEXT nothing
// on the quorum port is authenticated: brokers' registrations and
// heartbeats, AlterPartition, the admin requests brokers forward (in
// Envelopes) and the raft quorum's own replication all come from
// User:ANONYMOUS, so either ANONYMOUS lacks CLUSTER_ACTION and brokers
// cannot register, or it has it and anyone who reaches the port may
// register, fence or shut down brokers and act as any principal. Raft's
// connections (hashicorp/raft's protocol, not Kafka's) are authenticated
// only by a TLS client certificate, so over SASL_PLAINTEXT, or SSL or
// SASL_SSL without ssl.client.auth=required, anyone who reaches the port
// may speak to the quorum.
func warnControllerExposure(o Options, supers []security.Principal) {
	if o.Logger == nil {
		return
	}
	for _, l := range o.Config.Listeners {
		if !slices.Contains(o.Config.ControllerListenerNames, l.Name) {
			continue
		}
		switch l.SecurityProtocol {
		case "PLAINTEXT":
			consequence := "User:ANONYMOUS needs CLUSTER_ACTION on the cluster for brokers to register: add it to super.users or grant it with an ACL, which lets anyone who reaches the port act as a broker"
			if o.Config.AllowEveryoneIfNoACLFound || slices.Contains(supers, security.Anonymous) {
				consequence = "User:ANONYMOUS is allowed CLUSTER_ACTION, so anyone who reaches the port may register, fence or shut down brokers and forward admin requests as any principal"
			}
			o.Logger.Warn("the controller listener is PLAINTEXT: broker registrations and heartbeats, AlterPartition, forwarded admin requests and the raft quorum's replication are unauthenticated and unencrypted, and the controller sees every sender as User:ANONYMOUS; "+consequence+"; make the controller listener SSL with ssl.client.auth=required or SASL_SSL",
				"listener", l.Name)
		case "SASL_PLAINTEXT":
			o.Logger.Warn("the controller listener is SASL_PLAINTEXT: the Kafka requests on the quorum port are authenticated, but the raft quorum's replication is unauthenticated and unencrypted (raft's connections are authenticated only by a TLS client certificate); make the controller listener SSL or SASL_SSL with ssl.client.auth=required",
				"listener", l.Name)
		case "SSL", "SASL_SSL":
			if auth := controllerClientAuth(o.Config, l.Name, l.SecurityProtocol); auth != "required" {
				o.Logger.Warn("the controller listener's raft connections are authenticated only by a TLS client certificate, and ssl.client.auth is not required there: anyone who reaches the port may speak to the metadata quorum; set listener.name."+strings.ToLower(l.Name)+".ssl.client.auth=required",
					"listener", l.Name, "security.protocol", l.SecurityProtocol, "ssl.client.auth", auth)
			}
		}
	}
}

// controllerClientAuth is the ssl.client.auth of a controller listener
// ("none" without TLS). KIP-684: on SASL_SSL it counts only when set with
// the listener's prefix.
func controllerClientAuth(cfg *config.Broker, listener, protocol string) string {
	var v string
	switch protocol {
	case "SSL":
		v, _ = cfg.ListenerLookup(listener, "")("ssl.client.auth")
	case "SASL_SSL":
		v, _ = cfg.ListenerPrefixed(listener, "ssl.client.auth")
	}
	if v = strings.ToLower(strings.TrimSpace(v)); v == "" {
		return "none"
	}
	return v
}

// trusted reports whether r is answered without authorization.
func (b *Broker) trusted(r *server.Request) bool {
	return b.authz == nil || r.Conn == nil || r.Conn.Principal == controlPlanePrincipal
}

// subject is who sends r, as ACLs match it: the principal and the client's
// IP address.
func subject(r *server.Request) acl.Subject {
	s := acl.Subject{Principal: r.Conn.Principal}
	switch a := r.Conn.Remote.(type) {
	case *net.TCPAddr:
		s.Host = a.IP.String()
	case nil:
	default:
		if h, _, err := net.SplitHostPort(a.String()); err == nil {
			s.Host = h
		}
	}
	return s
}

// allowed reports whether r's principal may perform op on the resource.
func (b *Broker) allowed(r *server.Request, typ kmsg.ACLResourceType, name string, op kmsg.ACLOperation) bool {
	if b.trusted(r) {
		return true
	}
	return b.authz.Authorize(subject(r), typ, name, op)
}

// allowedCluster reports whether r's principal may perform op on the
// cluster.
func (b *Broker) allowedCluster(r *server.Request, op kmsg.ACLOperation) bool {
	return b.allowed(r, acl.ResourceCluster, acl.ClusterName, op)
}

// allowedTopic is allowed for a topic.
func (b *Broker) allowedTopic(r *server.Request, name string, op kmsg.ACLOperation) bool {
	return b.allowed(r, acl.ResourceTopic, name, op)
}

// allowedGroup is allowed for a group.
func (b *Broker) allowedGroup(r *server.Request, id string, op kmsg.ACLOperation) bool {
	return b.allowed(r, acl.ResourceGroup, id, op)
}

// authorizedOps is the authorized_operations bit field of a resource for
// r's principal (KIP-430); with no authorizer, every operation of the type.
func (b *Broker) authorizedOps(r *server.Request, typ kmsg.ACLResourceType, name string) int32 {
	if b.trusted(r) {
		return acl.AllOperations(typ)
	}
	return b.authz.AuthorizedOperations(subject(r), typ, name)
}

// earlyStartListeners is the set of early.start.listeners, when an
// authorizer is configured (Kafka's option only matters then).
func earlyStartListeners(cfg *config.Broker) map[string]bool {
	if cfg.AuthorizerClassName == "" {
		return nil
	}
	m := map[string]bool{}
	for _, l := range cfg.EarlyStartListeners {
		m[l] = true
	}
	return m
}

// startsEarly reports whether r arrived on an early-start listener.
func (b *Broker) startsEarly(r *server.Request) bool {
	return r.Conn != nil && b.earlyStart[r.Conn.Listener]
}
