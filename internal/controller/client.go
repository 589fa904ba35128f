package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metadata/quorum"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/security/clientauth"
)

// ForwardClientID is the client id of requests a broker forwards to the
// controller. A broker receiving a request with this id answers it itself
// instead of forwarding again, so a request crosses at most one hop even
// while leadership moves (the answer is then NOT_CONTROLLER and the
// forwarding broker retries).
const ForwardClientID = "vltava-controller-channel"

// Versions of the control-plane APIs this client sends; every Vltava node
// serves them (same binary).
const (
	brokerRegistrationVersion  = 3
	brokerHeartbeatVersion     = 1
	alterPartitionVersion      = 3
	allocateProducerIDsVersion = 0
)

// retryBackoff is the pause between attempts while no controller is
// reachable (an election, a restarting node).
const retryBackoff = 50 * time.Millisecond

// ClientOptions configures a Client.
type ClientOptions struct {
	NodeID int32
	Quorum Quorum
	// Active and Controller are this node's controller, nil on a
	// broker-only node; when this node leads the quorum, calls go to them
	// directly.
	Active     *Active
	Controller *rules.Controller
	// Voters is controller.quorum.voters: node id -> host:port. Every
	// controller serves its Kafka-protocol controller APIs on that
	// address, behind quorum.ControllerRPCByte, so the active controller
	// is found from the quorum alone, never from the metadata image (a
	// dedicated controller registers no endpoint there, and a restarted
	// broker's image may lag for seconds).
	Voters map[int32]string
	// BootstrapServers is controller.quorum.bootstrap.servers, for a
	// dynamic quorum (KIP-853; Voters empty): the controller endpoints
	// tried in turn when the leader is unknown.
	BootstrapServers []string
	// LeaderAddr, for a dynamic quorum, returns the leader's controller
	// endpoint (its raft address), "" when unknown.
	LeaderAddr func() string
	// Security is how connections to the controllers are made: the
	// controller listener's protocol (controller.listener.names,
	// listener.security.protocol.map), TLS and SASL
	// (sasl.mechanism.controller.protocol); nil: PLAINTEXT.
	Security *clientauth.Security
	Logger   *slog.Logger
}

// Client is this broker's channel to the active controller (KRaft's
// NodeToControllerChannelManager). It sends to the raft leader's voter
// address; when no leader is known, or the one it knows failed the last
// attempt, it asks the voters in turn, as a Kafka broker walks
// controller.quorum.voters (a voter that is not the leader answers
// NOT_CONTROLLER). Every call retries, until its context ends, while there
// is no leader, the leader is unreachable, or the answer is NOT_CONTROLLER.
//
// Thread-safety: safe for concurrent use; mu guards the connection cache
// and the voter rotation.
type Client struct {
	o           ClientOptions
	logger      *slog.Logger
	brokerEpoch atomic.Int64
	// fallback is the controller endpoints tried in turn when the leader
	// is unknown: Voters' addresses in id order, or the bootstrap servers.
	fallback []string

	mu struct {
		sync.Mutex
		conns map[string]*rpcConn
		// nextVoter indexes fallback: the endpoint to try next when the
		// leader is unknown.
		nextVoter int
	}
}

var _ partition.ControllerClient = (*Client)(nil)

// NewClient returns a client; it connects lazily.
func NewClient(o ClientOptions) *Client {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{o: o, logger: o.Logger}
	for _, id := range slices.Sorted(maps.Keys(o.Voters)) {
		c.fallback = append(c.fallback, o.Voters[id])
	}
	if len(c.fallback) == 0 {
		c.fallback = slices.Clone(o.BootstrapServers)
	}
	c.mu.conns = map[string]*rpcConn{}
	c.brokerEpoch.Store(-1)
	return c
}

// Close closes the cached connections.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cn := range c.mu.conns {
		cn.close()
	}
	clear(c.mu.conns)
}

// SetBrokerEpoch records this broker's current registration epoch, sent
// with AlterPartition and AllocateProducerIds.
func (c *Client) SetBrokerEpoch(e int64) { c.brokerEpoch.Store(e) }

// IsLocal reports whether this node is the active controller, so requests
// are answered here rather than forwarded.
func (c *Client) IsLocal() bool { return c.o.Active != nil && c.o.Active.IsActive() }

// ControllerID returns the active controller's node id, if known.
func (c *Client) ControllerID() (int32, bool) { return c.o.Quorum.LeaderID() }

// controllerConn returns the connection to the controller to ask next: the
// raft leader's voter address, unless it is unknown or already failed this
// call (tried holds the addresses that did), in which case the next voter in
// turn that has not. Once every voter has failed, it starts over. Each API
// travels on its channel's connection to that address (channelOf).
func (c *Client) controllerConn(tried map[string]bool, apiKey int16) (*rpcConn, error) {
	if len(c.fallback) == 0 {
		return nil, fmt.Errorf("%w: no controller.quorum.voters or controller.quorum.bootstrap.servers to reach the controller at", kerr.NotController)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	pick := func() string {
		if c.o.LeaderAddr != nil {
			if a := c.o.LeaderAddr(); a != "" && !tried[a] {
				return a
			}
		} else if id, ok := c.o.Quorum.LeaderID(); ok {
			if a, ok := c.o.Voters[id]; ok && !tried[a] {
				return a
			}
		}
		for range c.fallback {
			a := c.fallback[c.mu.nextVoter%len(c.fallback)]
			c.mu.nextVoter++
			if !tried[a] {
				return a
			}
		}
		return ""
	}
	addr := pick()
	if addr == "" {
		clear(tried)
		addr = pick()
	}
	key := addr + "/" + channelOf(apiKey)
	cn, ok := c.mu.conns[key]
	if !ok {
		cn = newRPCConn(addr, ForwardClientID, quorum.ControllerRPCByte, c.o.Security)
		c.mu.conns[key] = cn
	}
	return cn, nil
}

// channelOf names the connection an API travels on. A connection carries
// one request at a time, and a forwarded admin request is answered only
// once every broker, this one included, has reported in a heartbeat that it
// applied the change (Active.WaitBrokersApplied): heartbeats queued behind
// it would wait for themselves. So, like Kafka's separate broker-to-controller
// channels (heartbeat, alter-partition, forwarding), lifecycle RPCs, the
// partition leaders' RPCs and forwarded requests each have their own.
// AssignReplicasToDirs is sent by the lifecycle loop between heartbeats, so
// it shares their connection and never waits behind a forwarded request.
func channelOf(apiKey int16) string {
	switch kmsg.Key(apiKey) {
	case kmsg.BrokerRegistration, kmsg.BrokerHeartbeat, kmsg.AssignReplicasToDirs:
		return "heartbeat"
	case kmsg.AlterPartition, kmsg.AllocateProducerIDs:
		return "control"
	default:
		return "forwarding"
	}
}

// retriable reports whether a failed attempt should be retried against
// whichever node is the controller next.
func retriable(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke == kerr.NotController || ke == kerr.RequestTimedOut
	}
	return true // network errors
}

// call runs local when this node is the active controller, otherwise sends
// req and decodes the answer with remote; it retries retriable failures
// until ctx ends.
func (c *Client) call(ctx context.Context, local func() error, req kmsg.Request, remote func(kmsg.Response) error) error {
	var last error
	tried := map[string]bool{}
	for {
		var err error
		if c.IsLocal() && local != nil {
			err = local()
		} else {
			var cn *rpcConn
			if cn, err = c.controllerConn(tried, req.Key()); err == nil {
				var resp kmsg.Response
				if resp, err = cn.call(ctx, req); err == nil {
					err = remote(resp)
				}
				if err != nil {
					tried[cn.addr] = true
				}
			}
		}
		if err == nil || !retriable(err) {
			return err
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: reaching the controller: %v", kerr.RequestTimedOut, last)
		case <-time.After(retryBackoff):
		}
	}
}

func codeErr(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	err := kerr.ErrorForCode(code)
	if msg != nil && *msg != "" {
		return fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}

// Register sends this broker's registration.
func (c *Client) Register(ctx context.Context, reg rules.Registration) (rules.RegistrationResult, error) {
	var res rules.RegistrationResult
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.SetVersion(brokerRegistrationVersion)
	req.BrokerID = reg.BrokerID
	req.IncarnationID = reg.IncarnationID
	req.Rack = nil
	if reg.Rack != "" {
		req.Rack = kmsg.StringPtr(reg.Rack)
	}
	req.PreviousBrokerEpoch = -1
	for _, ep := range reg.Endpoints {
		l := kmsg.NewBrokerRegistrationRequestListener()
		l.Name, l.Host, l.Port, l.SecurityProtocol = ep.Name, ep.Host, uint16(ep.Port), ep.SecurityProtocol
		req.Listeners = append(req.Listeners, l)
	}
	err := c.call(ctx, func() error {
		var err error
		res, err = c.o.Active.Register(ctx, reg)
		return err
	}, req, func(r kmsg.Response) error {
		resp := r.(*kmsg.BrokerRegistrationResponse)
		if err := codeErr(resp.ErrorCode, nil); err != nil {
			return err
		}
		res = rules.RegistrationResult{BrokerEpoch: resp.BrokerEpoch}
		return nil
	})
	return res, err
}

// Heartbeat sends one heartbeat.
func (c *Client) Heartbeat(ctx context.Context, hb Heartbeat) (HeartbeatResult, error) {
	var res HeartbeatResult
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.SetVersion(brokerHeartbeatVersion)
	req.BrokerID, req.BrokerEpoch = hb.BrokerID, hb.BrokerEpoch
	req.CurrentMetadataOffset = hb.CurrentMetadataOffset
	req.WantFence, req.WantShutdown = hb.WantFence, hb.WantShutDown
	req.OfflineLogDirs = hb.OfflineLogDirs
	err := c.call(ctx, func() error {
		var err error
		res, err = c.o.Active.Heartbeat(ctx, hb)
		return err
	}, req, func(r kmsg.Response) error {
		resp := r.(*kmsg.BrokerHeartbeatResponse)
		if err := codeErr(resp.ErrorCode, nil); err != nil {
			return err
		}
		res = HeartbeatResult{IsCaughtUp: resp.IsCaughtUp, IsFenced: resp.IsFenced, ShouldShutDown: resp.ShouldShutdown}
		return nil
	})
	return res, err
}

// AlterPartition implements partition.ControllerClient: it proposes one
// ISR change and returns the controller's verdict for it (nil when
// accepted; the new state arrives with the next metadata image).
func (c *Client) AlterPartition(ctx context.Context, ch partition.ISRChange) error {
	item := rules.AlterPartitionItem{
		TopicID: metadata.Uuid(ch.TopicID), Partition: ch.Partition,
		LeaderEpoch: ch.LeaderEpoch, PartitionEpoch: ch.PartitionEpoch, NewISR: ch.NewISR,
	}
	epoch := c.brokerEpoch.Load()
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(alterPartitionVersion)
	req.BrokerID, req.BrokerEpoch = c.o.NodeID, epoch
	t := kmsg.NewAlterPartitionRequestTopic()
	t.TopicID = ch.TopicID
	p := kmsg.NewAlterPartitionRequestTopicPartition()
	p.Partition, p.LeaderEpoch, p.PartitionEpoch = ch.Partition, ch.LeaderEpoch, ch.PartitionEpoch
	for _, id := range ch.NewISR {
		s := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		s.BrokerID, s.BrokerEpoch = id, -1
		p.NewEpochISR = append(p.NewEpochISR, s)
	}
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return c.call(ctx, func() error {
		res, err := c.o.Controller.AlterPartition(ctx, c.o.NodeID, epoch, []rules.AlterPartitionItem{item})
		if err != nil {
			return err
		}
		return res[0].Err
	}, req, func(r kmsg.Response) error {
		resp := r.(*kmsg.AlterPartitionResponse)
		if err := codeErr(resp.ErrorCode, nil); err != nil {
			return err
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				return codeErr(p.ErrorCode, nil)
			}
		}
		return fmt.Errorf("%w: AlterPartition response without the partition", kerr.UnknownServerError)
	})
}

// AllocateProducerIDs asks the controller for a block of producer ids and
// returns its first id and length.
func (c *Client) AllocateProducerIDs(ctx context.Context) (first int64, count int32, err error) {
	epoch := c.brokerEpoch.Load()
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.SetVersion(allocateProducerIDsVersion)
	req.BrokerID, req.BrokerEpoch = c.o.NodeID, epoch
	err = c.call(ctx, func() error {
		var err error
		first, err = c.o.Controller.AllocateProducerIDs(ctx, c.o.NodeID, rules.ProducerIDBlockSize)
		count = rules.ProducerIDBlockSize
		return err
	}, req, func(r kmsg.Response) error {
		resp := r.(*kmsg.AllocateProducerIDsResponse)
		if err := codeErr(resp.ErrorCode, nil); err != nil {
			return err
		}
		first, count = resp.ProducerIDStart, resp.ProducerIDLen
		return nil
	})
	return first, count, err
}

// Forward sends an admin request, as received from a client, to the active
// controller and returns its answer (KIP-590). The caller must not be the
// active controller (IsLocal) and answers locally otherwise. Whole-request
// failures to reach a controller end as an error wrapping
// REQUEST_TIMED_OUT when ctx ends; a NOT_CONTROLLER answer in the response
// (leadership moved under the request) is retried.
func (c *Client) Forward(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	var out kmsg.Response
	err := c.call(ctx, nil, req, func(r kmsg.Response) error {
		if hasNotController(r) {
			return kerr.NotController
		}
		out = r
		return nil
	})
	return out, err
}

// hasNotController reports whether a forwarded admin response failed
// because its receiver was no longer the controller.
func hasNotController(r kmsg.Response) bool {
	nc := kerr.NotController.Code
	switch resp := r.(type) {
	case *kmsg.CreateTopicsResponse:
		for _, t := range resp.Topics {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range resp.Topics {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.CreatePartitionsResponse:
		for _, t := range resp.Topics {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.AlterConfigsResponse:
		for _, t := range resp.Resources {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, t := range resp.Resources {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.ElectLeadersResponse:
		if resp.ErrorCode == nc {
			return true
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == nc {
					return true
				}
			}
		}
	case *kmsg.AlterPartitionAssignmentsResponse:
		if resp.ErrorCode == nc {
			return true
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == nc {
					return true
				}
			}
		}
	case *kmsg.ListPartitionReassignmentsResponse:
		return resp.ErrorCode == nc
	case *kmsg.AddRaftVoterResponse:
		return resp.ErrorCode == nc
	case *kmsg.RemoveRaftVoterResponse:
		return resp.ErrorCode == nc
	case *kmsg.UpdateRaftVoterResponse:
		return resp.ErrorCode == nc
	case *kmsg.AlterClientQuotasResponse:
		for _, e := range resp.Entries {
			if e.ErrorCode == nc {
				return true
			}
		}
	}
	return false
}
