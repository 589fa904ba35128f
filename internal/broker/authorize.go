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
// transactions are refused. A PLAINTEXT controller listener likewise makes
// forwarded admin requests User:ANONYMOUS's Envelopes.
func warnAnonymousReplication(o Options, supers []security.Principal) {
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
	// Forwarded admin requests reach the controller in an Envelope from
	// the controller listener's principal (authorize_envelope.go).
	for _, l := range o.Config.Listeners {
		if slices.Contains(o.Config.ControllerListenerNames, l.Name) && l.SecurityProtocol == "PLAINTEXT" {
			if o.Logger != nil {
				o.Logger.Warn("the controller listener is PLAINTEXT, so brokers forward admin requests to the controller as User:ANONYMOUS, which needs CLUSTER_ACTION on the cluster: add it to super.users or grant it with an ACL",
					"listener", l.Name)
			}
			return
		}
	}
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
