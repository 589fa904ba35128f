// Package broker answers the Kafka APIs. Each API lives in its own file,
// which opens with a comment on the versions and behaviour it implements and
// registers its handler and version range in init; ApiVersions answers from
// that registry, so the advertised table cannot drift from the code.
//
// Handlers translate internal errors into Kafka error codes (see errCode);
// nothing below this package speaks in codes.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sync/singleflight"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/controller"
	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metadata/quorum"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/security/clientauth"
	"github.com/vltava/vltava/internal/security/quota"
	"github.com/vltava/vltava/internal/server"
	"github.com/vltava/vltava/internal/txn"
)

// Broker serves the Kafka APIs of one node.
type Broker struct {
	cfg        *config.Broker
	nodeID     int32
	clusterID  string
	log        *slog.Logger
	meta       metadata.Log
	controller *rules.Controller
	partitions *partition.Manager
	// schemas is where broker-side schema validation looks ids up
	// (schema_validation.go).
	schemas schemaValidator
	// leaderQuota throttles follower fetches (fetch_throttle.go).
	leaderQuota ReplicationQuota
	// clientQuotas measures clients against their quotas
	// (client_quota_throttle.go).
	clientQuotas *quota.Manager
	// groups is the group coordinator; nil on a broker assembled
	// without one (group APIs then answer COORDINATOR_NOT_AVAILABLE).
	groups *group.Coordinator
	// txns is the transaction coordinator; nil on a broker assembled
	// without one (transaction APIs then answer COORDINATOR_NOT_AVAILABLE).
	txns *txn.Coordinator
	// channel reaches the active controller; nil on a broker assembled
	// without one (tests): admin requests are then answered by the local
	// controller.
	channel *controller.Client
	// active is this node's controller duties; nil on a broker-only node.
	active *controller.Active
	// quorum describes the metadata quorum (DescribeQuorum); nil without
	// one.
	quorum Quorum
	// kraftVersion is the finalized kraft.version ApiVersions reports: 1
	// for a dynamic metadata quorum (KIP-853), else 0.
	kraftVersion int16
	// ready, when set, holds client requests until it is closed: the node
	// serves clients only once the controller has unfenced it, as Kafka's
	// broker enables request processing only then. Control-plane requests
	// (see controlPlaneAPIs) pass at once.
	ready <-chan struct{}

	// interBrokerListener is the listener other brokers use; the
	// inter-broker APIs and replica fetches are refused on the others
	// (listener_scope.go).
	interBrokerListener string

	// loggers are the node's loggers (broker_logger.go); nil: broker
	// logger configs are refused.
	loggers LoggerLevels
	// telemetry receives client metrics; nil: the KIP-714 APIs are not
	// advertised.
	telemetry TelemetryReceiver
	remote    RemoteTier
	// checkTLS is Options.CheckListenerTLS (dynamic_tls.go).
	checkTLS func(perBroker map[string]string) error

	fetchSessions *fetchSessionCache
	producerIDs   producerIDBlock
	// txnVerifier checks transactional produces with their coordinator
	// (txn_verify.go).
	txnVerifier TxnVerifier
	// tokenExpiry removes expired delegation tokens on the active
	// controller (delegation_token_expiry.go).
	tokenExpiry *tokenExpiry
	// verification is transaction.partition.verification.enable as of
	// the image it was read from (txn_verify.go).
	verification atomic.Pointer[verificationSetting]

	// authz is the ACL authorizer (authorize.go); nil without
	// authorizer.class.name.
	authz *acl.Authorizer
	// earlyStart are the early.start.listeners: with an authorizer, their
	// client requests are not held until the node is ready (only super
	// users are authorized there until then, as Kafka's StandardAuthorizer
	// before its initial load).
	earlyStart map[string]bool

	// autoCreates runs one auto-creation per missing topic name at a time
	// (metadata.go; find_coordinator.go for __consumer_offsets), shared by
	// the requests that asked for it.
	autoCreates singleflight.Group
}

// Options are the parts a Broker is assembled from.
type Options struct {
	Config     *config.Broker
	ClusterID  string
	Meta       metadata.Log
	Controller *rules.Controller
	Partitions *partition.Manager
	Groups     *group.Coordinator
	Txns       *txn.Coordinator
	// Channel, Active and Quorum are the cluster's control plane (see the
	// fields); all may be nil for a broker with a local-only controller.
	Channel *controller.Client
	Active  *controller.Active
	Quorum  Quorum
	// KRaftVersion is 1 when the metadata quorum is dynamic (KIP-853).
	KRaftVersion int16
	// Ready, if set, gates client requests until it is closed.
	Ready <-chan struct{}
	// LeaderQuota is leader.replication.throttled.rate (fetch_throttle.go);
	// nil: unlimited.
	LeaderQuota ReplicationQuota
	// TxnVerifier checks transactional produces with the coordinator
	// (KIP-890); nil: AddPartitionsToTxn with verify_only to the leader of
	// the transactional id's __transaction_state partition.
	TxnVerifier TxnVerifier
	Logger      *slog.Logger
	// Loggers, if set, serves the broker-logger configs (broker_logger.go).
	Loggers LoggerLevels
	// Telemetry, if set (telemetry.enable), receives client metrics
	// (KIP-714, get_telemetry_subscriptions.go).
	Telemetry TelemetryReceiver

	// InterBrokerSecurity is how the default TxnVerifier connects to
	// coordinators: the inter-broker listener's TLS and SASL; nil is
	// PLAINTEXT.
	InterBrokerSecurity *clientauth.Security
	// Remote, if set (remote.log.storage.system.enable), reads the remote
	// tier of tiered partitions (remote_tier.go).
	Remote RemoteTier
	// CheckListenerTLS, if set, loads the key and trust stores this
	// node's TLS listeners would use with these per-broker dynamic
	// configs, without installing them (dynamic_tls.go).
	CheckListenerTLS func(perBroker map[string]string) error
}

// Quorum is the metadata quorum as DescribeQuorum reports it, and the
// leader's way to hurry a commit to the followers (PublishCommit, before
// waiting for every broker to apply an admin change); *quorum.RaftLog
// implements it.
type Quorum interface {
	QuorumState() (quorum.QuorumState, error)
	IsLeader() bool
	LeaderID() (int32, bool)
	PublishCommit()
}

// New assembles a Broker.
func New(o Options) *Broker {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	if o.LeaderQuota == nil {
		o.LeaderQuota = unlimitedQuota{}
	}
	if o.TxnVerifier == nil {
		o.TxnVerifier = newCoordinatorVerifier(o.Config.TransactionStateLogNumPartitions, interBrokerListener(o.Config), o.Config.NodeID,
			time.Duration(o.Config.RequestTimeoutMs)*time.Millisecond, o.InterBrokerSecurity)
	}
	b := &Broker{
		cfg:           o.Config,
		nodeID:        o.Config.NodeID,
		clusterID:     o.ClusterID,
		log:           log,
		meta:          o.Meta,
		controller:    o.Controller,
		partitions:    o.Partitions,
		groups:        o.Groups,
		txns:          o.Txns,
		channel:       o.Channel,
		active:        o.Active,
		quorum:        o.Quorum,
		kraftVersion:  o.KRaftVersion,
		ready:         o.Ready,
		leaderQuota:   o.LeaderQuota,
		clientQuotas:  newClientQuotas(o.Config),
		txnVerifier:   o.TxnVerifier,
		loggers:       o.Loggers,
		telemetry:     o.Telemetry,
		remote:        o.Remote,
		checkTLS:      o.CheckListenerTLS,
		fetchSessions: newFetchSessionCache(int(o.Config.MaxIncrementalFetchSessionCacheSlots)),

		interBrokerListener: interBrokerListener(o.Config),
		authz:               newAuthorizer(o),
		earlyStart:          earlyStartListeners(o.Config),
	}
	b.tokenExpiry = b.startTokenExpiry() // delegation_token_expiry.go
	return b
}

// Close releases the connections the broker opened to other brokers (the
// transaction verifications') and stops its background work; the
// listeners are closed first.
func (b *Broker) Close() {
	b.tokenExpiry.stop()
	b.txnVerifier.Close()
}

// handlerFunc answers one API. It returns the response to send (nil for
// none) or an error that closes the connection.
type handlerFunc func(b *Broker, ctx context.Context, r *server.Request) (kmsg.Response, error)

type api struct {
	minVersion, maxVersion int16
	handle                 handlerFunc
}

// apis is the registry, filled by each API file's init.
var apis = map[int16]api{}

// register declares that an API is served for versions [minV, maxV].
func register(key kmsg.Key, minV, maxV int16, fn handlerFunc) {
	if _, dup := apis[int16(key)]; dup {
		panic(fmt.Sprintf("API %s registered twice", key.Name()))
	}
	if maxV > kmsg.RequestForKey(int16(key)).MaxVersion() {
		panic(fmt.Sprintf("API %s registered up to v%d, beyond what kmsg decodes", key.Name(), maxV))
	}
	apis[int16(key)] = api{minVersion: minV, maxVersion: maxV, handle: fn}
}

// controlPlaneAPIs are answered while the node is still starting: the
// controller must serve registrations and heartbeats of the brokers
// (itself included) before they are unfenced, and clients negotiate
// versions first.
var controlPlaneAPIs = map[int16]bool{
	int16(kmsg.ApiVersions):          true,
	int16(kmsg.BrokerRegistration):   true,
	int16(kmsg.BrokerHeartbeat):      true,
	int16(kmsg.AssignReplicasToDirs): true,
	int16(kmsg.AlterPartition):       true,
	int16(kmsg.AllocateProducerIDs):  true,
	int16(kmsg.DescribeQuorum):       true,
	int16(kmsg.Fetch):                true, // followers catch up before they are unfenced
	int16(kmsg.SASLHandshake):        true, // followers authenticate before they fetch
	int16(kmsg.SASLAuthenticate):     true,
}

// controllerAPIs are the APIs a controller answers on its quorum port
// (ControllerHandler): the broker-to-controller RPCs of KIP-631 and
// KIP-866, DescribeQuorum, and the admin requests brokers forward to the
// controller (KIP-590). Kafka's controllers serve no client APIs (Metadata,
// Produce, Fetch, groups): they are not brokers.
var controllerAPIs = map[int16]bool{
	int16(kmsg.ApiVersions):                true,
	int16(kmsg.BrokerRegistration):         true,
	int16(kmsg.BrokerHeartbeat):            true,
	int16(kmsg.AssignReplicasToDirs):       true,
	int16(kmsg.AlterPartition):             true,
	int16(kmsg.AllocateProducerIDs):        true,
	int16(kmsg.DescribeQuorum):             true,
	int16(kmsg.AddRaftVoter):               true,
	int16(kmsg.RemoveRaftVoter):            true,
	int16(kmsg.UpdateRaftVoter):            true,
	int16(kmsg.CreateTopics):               true,
	int16(kmsg.DeleteTopics):               true,
	int16(kmsg.CreatePartitions):           true,
	int16(kmsg.AlterConfigs):               true,
	int16(kmsg.IncrementalAlterConfigs):    true,
	int16(kmsg.ElectLeaders):               true,
	int16(kmsg.AlterPartitionAssignments):  true,
	int16(kmsg.ListPartitionReassignments): true,
	int16(kmsg.UpdateFeatures):             true,
	int16(kmsg.AlterClientQuotas):          true,
	int16(kmsg.CreateACLs):                 true,
	int16(kmsg.DeleteACLs):                 true,
	int16(kmsg.AlterUserSCRAMCredentials):  true,
	int16(kmsg.SASLHandshake):              true, // a SASL controller listener
	int16(kmsg.SASLAuthenticate):           true,
}

// ControllerHandler returns the handler of this node's controller endpoint
// on the quorum port: it serves only controllerAPIs (ApiVersions lists only
// those) and answers at once, without waiting for this node's broker side
// to be unfenced, since the controller answers the brokers' registrations.
// Only Vltava brokers reach that port (it takes quorum.ControllerRPCByte
// first) and they send every request with controller.ForwardClientID, so
// admin requests are answered here rather than forwarded again. On a
// controller-only node the Broker is assembled without partitions and
// groups, which these APIs do not use.
func (b *Broker) ControllerHandler() server.Handler { return controllerHandler{b} }

// controllerHandler is the restricted view of a Broker served on the quorum
// port. Thread-safety: as Broker's.
type controllerHandler struct{ b *Broker }

// VersionRange implements server.Handler.
func (h controllerHandler) VersionRange(key int16) (int16, int16, bool) {
	if key == int16(kmsg.Envelope) {
		return envelopeVersion, envelopeVersion, true
	}
	if !controllerAPIs[key] {
		return 0, 0, false
	}
	return h.b.VersionRange(key)
}

// Handle implements server.Handler.
func (h controllerHandler) Handle(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	if r.Key == int16(kmsg.Envelope) {
		return h.b.handleEnvelope(ctx, r) // authorize_envelope.go
	}
	if !controllerAPIs[r.Key] {
		return nil, fmt.Errorf("API key %d is not served by a controller", r.Key)
	}
	// As Kafka's controller (ControllerApis): each request is authorized
	// with the quorum connection's principal (the broker's SASL or
	// certificate principal, User:ANONYMOUS over PLAINTEXT), e.g.
	// CLUSTER_ACTION for BrokerRegistration, BrokerHeartbeat,
	// AlterPartition, AllocateProducerIds and AssignReplicasToDirs.
	resp, err := h.b.handleAuthorized(ctx, apis[r.Key], r) // authorize_envelope.go
	if av, ok := resp.(*kmsg.ApiVersionsResponse); ok && err == nil {
		av.ApiKeys = slices.DeleteFunc(av.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool {
			return !controllerAPIs[k.ApiKey]
		})
	}
	return resp, err
}

// VersionRange implements server.Handler.
func (b *Broker) VersionRange(key int16) (int16, int16, bool) {
	a, ok := apis[key]
	return a.minVersion, a.maxVersion, ok
}

// Handle implements server.Handler.
func (b *Broker) Handle(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	a, ok := apis[r.Key]
	if !ok {
		return nil, fmt.Errorf("unsupported API key %d", r.Key)
	}
	client := b.onClientListener(r)
	if client && interBrokerAPIs[r.Key] {
		return nil, fmt.Errorf("%s is served only on the inter-broker listener %s, not on %s", kmsg.NameForKey(r.Key), b.interBrokerListener, r.Conn.Listener)
	}
	if client && r.Key == int16(kmsg.Fetch) && isReplicaFetch(r) {
		return refusedReplicaFetch(r), nil
	}
	if b.ready != nil && !controlPlaneAPIs[r.Key] && r.ClientID != controller.ForwardClientID && !b.startsEarly(r) {
		select {
		case <-b.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if refused := b.clusterRefused(r); refused != nil { // authorize_cluster.go
		return refused, nil
	}
	if f := resourceFilters[r.Key]; f != nil && !b.trusted(r) {
		next := a.handle
		a.handle = func(b *Broker, ctx context.Context, r *server.Request) (kmsg.Response, error) {
			return b.handleFiltered(ctx, r, next, f) // authorize_admin.go
		}
	}
	resp, err := b.handleMeasured(ctx, a, r)
	if client && r.Key == int16(kmsg.ApiVersions) && err == nil {
		withoutInterBrokerAPIs(resp)
	}
	return resp, err
}

// awaitMetadata waits until this broker's partitions reflect the metadata
// committed so far, so an admin request answers only once its effect is
// visible here: a produce right after CreateTopics finds the partitions.
// A slow apply is not an error for the request that committed the change.
func (b *Broker) awaitMetadata(ctx context.Context) {
	if b.partitions == nil {
		return // a controller-only node: nothing applies the image to partitions
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.partitions.WaitApplied(ctx, b.meta.Image().Offset()); err != nil {
		b.log.Warn("metadata change not yet applied to partitions", "err", err)
	}
}

// errCode translates an internal error into a Kafka error code: errors
// wrapping a *kerr.Error carry their code; anything else is
// UNKNOWN_SERVER_ERROR, logged because it is a bug or an I/O failure.
func (b *Broker) errCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return kerr.RequestTimedOut.Code
	}
	b.log.Error("request failed with an internal error", "err", err)
	return kerr.UnknownServerError.Code
}

// errMessage is the message sent with an error code in responses that have
// a message field: the error's text for Kafka errors with detail, nil
// otherwise.
func errMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}

// controllerIsLocal reports whether admin requests are answered by this
// node's controller: it is the active controller, or there is no channel
// to another one.
func (b *Broker) controllerIsLocal() bool { return b.channel == nil || b.channel.IsLocal() }

// forwardToController sends r to the active controller when this node is
// not it (KIP-590: any broker accepts admin requests and relays them) and
// returns the controller's answer. ok is false when the request is to be
// answered here: this node is the controller, the request was itself
// forwarded (one hop at most; the local answer is then NOT_CONTROLLER and
// the forwarding broker retries), or the controller could not be reached
// before the request timeout (the local controller's NOT_CONTROLLER answer
// is then the right error for the client to retry on).
func (b *Broker) forwardToController(ctx context.Context, r *server.Request) (resp kmsg.Response, ok bool) {
	if b.controllerIsLocal() || r.ClientID == controller.ForwardClientID {
		return nil, false
	}
	timeout := time.Duration(b.cfg.RequestTimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	if r.Conn != nil {
		resp, err = b.forwardEnveloped(fctx, r) // authorize_envelope.go
	} else {
		resp, err = b.channel.Forward(fctx, r.Body)
	}
	if err != nil {
		b.log.Warn("forwarding to the controller failed", "api", kmsg.NameForKey(r.Key), "err", err)
		return nil, false
	}
	return resp, true
}

// awaitImage waits (bounded) until this node's metadata satisfies cond: a
// forwarded change was committed by the controller but reaches this node's
// image a moment later, and a client acting on the answer (producing to a
// new topic) should find it here.
func (b *Broker) awaitImage(ctx context.Context, cond func(*metadata.Image) bool) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond(b.meta.Image()) {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	b.awaitMetadata(ctx)
}

// controllerID is the id Metadata and DescribeCluster report as the
// controller: the active controller when it is a live broker, else (a
// dedicated controller clients cannot reach) this broker, which forwards
// admin requests, as KRaft brokers report.
func (b *Broker) controllerID(img *metadata.Image) int32 {
	if b.channel == nil {
		return b.nodeID
	}
	if id, ok := b.channel.ControllerID(); ok {
		if br, ok := img.Broker(id); ok && !br.Fenced {
			return id
		}
	}
	return b.nodeID
}

// currentClusterID is the cluster's id from the metadata (committed by the
// first active controller), or this node's own id from meta.properties
// before the metadata has one.
func (b *Broker) currentClusterID(img *metadata.Image) string {
	if id := img.ClusterID(); id != "" {
		return id
	}
	return b.clusterID
}
