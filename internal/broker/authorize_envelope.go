package broker

// Forwarded requests carry their client's principal (KIP-590). A broker
// that is not the active controller wraps a client's admin request in an
// Envelope with the client's principal (Kafka's DefaultPrincipalData) and
// address; the controller unwraps it on its quorum port and authorizes the
// inner request as Kafka's controller does, with that principal, before
// handling it. The sender must have CLUSTER_ACTION on the cluster
// (Kafka's rule; the quorum connection's principal: the broker's SASL or
// certificate principal, User:ANONYMOUS over PLAINTEXT), else the
// Envelope is CLUSTER_AUTHORIZATION_FAILED. The Envelope itself is served
// only on the quorum port, which only the cluster's nodes reach
// (ControllerHandler), never on a client or inter-broker listener, so no
// client can claim another's principal. The receiving broker checks the same ACLs before forwarding
// (it needs the answer for its own filtering and quotas); both read the
// ACLs of the metadata log, so the controller's check refuses what an
// older image on the broker still allowed.

import (
	"context"
	"fmt"
	"net"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller"
	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

// envelopeVersion is the only Envelope version (0).
const envelopeVersion = 0

// forwardEnveloped forwards r to the active controller in an Envelope with
// its connection's principal.
func (b *Broker) forwardEnveloped(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	p := &kmsg.DefaultPrincipalData{}
	p.Type, p.Name = r.Conn.Principal.Type, r.Conn.Principal.Name
	p.TokenAuthenticated = r.Conn.TokenAuthenticated
	var host []byte
	if ip := subjectIP(r); ip != nil {
		if v4 := ip.To4(); v4 != nil {
			ip = v4
		}
		host = ip
	}
	return b.channel.ForwardEnvelope(ctx, r.Body, p.AppendTo(nil), host)
}

// subjectIP is the client's IP address, nil if unknown.
func subjectIP(r *server.Request) net.IP {
	if a, ok := r.Conn.Remote.(*net.TCPAddr); ok {
		return a.IP
	}
	return nil
}

// handleEnvelope answers an Envelope on the quorum port: the inner
// request, authorized with the enveloped principal, and its response
// wrapped. A malformed envelope, or one wrapping an API the controller
// does not serve to clients, is INVALID_REQUEST.
func (b *Broker) handleEnvelope(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.EnvelopeRequest)
	resp := req.ResponseKind().(*kmsg.EnvelopeResponse)
	// As Kafka's controller: only a sender with CLUSTER_ACTION on the
	// cluster (a broker, as the quorum connection authenticated it) may
	// speak for another principal.
	if !b.allowedCluster(r, acl.OpClusterAction) {
		b.log.Warn("refusing an Envelope from a principal without CLUSTER_ACTION", "principal", r.Conn.Principal.String())
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	inner, err := b.unwrapEnvelope(r, req)
	if err != nil {
		b.log.Warn("refusing a malformed Envelope", "err", err)
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	a := apis[inner.Key]
	innerResp, err := b.handleAuthorized(ctx, a, inner)
	if err != nil {
		return nil, err
	}
	if innerResp == nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil
	}
	innerResp.SetVersion(inner.Version)
	data := kbin.AppendInt32(nil, inner.CorrelationID)
	if innerResp.IsFlexible() {
		data = append(data, 0) // response header v1: no tagged fields
	}
	resp.ResponseData = innerResp.AppendTo(data)
	return resp, nil
}

// envelopedAPIs are the APIs an Envelope may carry: the admin APIs the
// controller serves for clients (not the brokers' own RPCs, ApiVersions or
// SASL, and not another Envelope).
func envelopedAPI(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate, kmsg.Envelope,
		kmsg.BrokerRegistration, kmsg.BrokerHeartbeat, kmsg.AssignReplicasToDirs,
		kmsg.AlterPartition, kmsg.AllocateProducerIDs:
		return false
	}
	return controllerAPIs[key]
}

// unwrapEnvelope decodes the inner request of an Envelope received on r's
// connection, as a request of the enveloped principal from the enveloped
// address.
func (b *Broker) unwrapEnvelope(r *server.Request, env *kmsg.EnvelopeRequest) (*server.Request, error) {
	var p kmsg.DefaultPrincipalData
	if err := p.ReadFrom(env.RequestPrincipal); err != nil {
		return nil, fmt.Errorf("principal: %w", err)
	}
	if p.Type == "" {
		return nil, fmt.Errorf("principal without a type")
	}
	rd := kbin.Reader{Src: env.RequestData}
	key, version, corr := rd.Int16(), rd.Int16(), rd.Int32()
	clientID := rd.NullableString()
	if !rd.Ok() {
		return nil, fmt.Errorf("truncated request header")
	}
	if !envelopedAPI(key) {
		return nil, fmt.Errorf("%s cannot be enveloped", kmsg.NameForKey(key))
	}
	if minV, maxV, ok := b.VersionRange(key); !ok || version < minV || version > maxV {
		return nil, fmt.Errorf("%s v%d is not served", kmsg.NameForKey(key), version)
	}
	body := kmsg.RequestForKey(key)
	body.SetVersion(version)
	src := rd.Src
	if body.IsFlexible() {
		n := rd.Uvarint()
		for i := uint32(0); i < n && rd.Ok(); i++ {
			rd.Uvarint()
			rd.Span(int(rd.Uvarint()))
		}
		if !rd.Ok() {
			return nil, fmt.Errorf("truncated request header tags")
		}
		src = rd.Src
	}
	if err := body.ReadFrom(src); err != nil {
		return nil, fmt.Errorf("%s v%d: %w", kmsg.NameForKey(key), version, err)
	}
	conn := *r.Conn
	conn.Principal = security.Principal{Type: p.Type, Name: p.Name}
	conn.TokenAuthenticated = p.TokenAuthenticated
	conn.Remote = nil
	if ip := net.IP(env.ClientHostAddress); len(ip) == net.IPv4len || len(ip) == net.IPv6len {
		conn.Remote = &net.TCPAddr{IP: ip}
	}
	id := controller.ForwardClientID // answered here, never forwarded again
	if clientID == nil || *clientID != id {
		clientID = &id
	}
	return &server.Request{Key: key, Version: version, CorrelationID: corr, ClientID: *clientID,
		Body: body, Conn: &conn, Received: r.Received, Size: len(env.RequestData)}, nil
}

// handleAuthorized runs a's handler for r with the authorization Broker.Handle
// applies: the whole-cluster checks, then the resource filters.
func (b *Broker) handleAuthorized(ctx context.Context, a api, r *server.Request) (kmsg.Response, error) {
	if refused := b.clusterRefused(r); refused != nil { // authorize_cluster.go
		return refused, nil
	}
	if f := resourceFilters[r.Key]; f != nil && !b.trusted(r) {
		return b.handleFiltered(ctx, r, a.handle, f) // authorize_admin.go
	}
	return a.handle(b, ctx, r)
}
