package broker

// What AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter (KIP-853) share:
// they change the voter set of a dynamic metadata quorum, on its leader.
// Brokers and controllers that do not lead forward them to the active
// controller (as DescribeQuorum); a forwarded request that reaches a node
// that is no longer the leader is answered NOT_CONTROLLER, which the
// forwarding broker retries.

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metadata/quorum"
	"github.com/vltava/vltava/internal/server"
)

// voterChanger is the quorum's side of the voter APIs; *quorum.RaftLog
// implements it.
type voterChanger interface {
	IsLeader() bool
	AddVoter(ctx context.Context, key quorum.ReplicaKey, addr string) error
	RemoveVoter(ctx context.Context, key quorum.ReplicaKey) error
	UpdateVoter(ctx context.Context, key quorum.ReplicaKey, addr string) error
}

// voterRequest runs change on the quorum leader, or forwards the request
// there. It returns the response to send when it forwarded, or the error
// of the change.
func (b *Broker) voterRequest(ctx context.Context, r *server.Request, clusterID *string, timeout time.Duration,
	change func(context.Context, voterChanger) error) (kmsg.Response, error) {
	vc, ok := b.quorum.(voterChanger)
	if !ok {
		return nil, fmt.Errorf("%w: this node has no metadata quorum", kerr.UnsupportedVersion)
	}
	if !vc.IsLeader() {
		if r.ClientID != controller.ForwardClientID && b.channel != nil {
			if fwd, err := b.channel.Forward(ctx, r.Body); err == nil {
				return fwd, nil
			}
		}
		return nil, fmt.Errorf("%w: node %d does not lead the metadata quorum", kerr.NotController, b.nodeID)
	}
	if clusterID != nil && *clusterID != "" {
		if cur := b.currentClusterID(b.meta.Image()); *clusterID != cur {
			return nil, fmt.Errorf("%w: the request's cluster id %s is not this cluster's (%s)", kerr.InconsistentClusterID, *clusterID, cur)
		}
	}
	if timeout <= 0 {
		timeout = time.Duration(b.cfg.RequestTimeoutMs) * time.Millisecond
	}
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return nil, change(cctx, vc)
}

// voterKey is a request's voter id and directory id.
func voterKey(id int32, dir [16]byte) quorum.ReplicaKey {
	return quorum.ReplicaKey{ID: id, DirectoryID: metadata.Uuid(dir)}
}

// voterListener is one listener a voter sends (AddRaftVoter's and
// UpdateRaftVoter's listener structs have this shape).
type voterListener = kmsg.AddRaftVoterRequestListener

// voterEndpoint picks the voter's controller endpoint from the listeners
// it sent: the one named like this cluster's controller listener
// (controller.listener.names), else the first.
func (b *Broker) voterEndpoint(ls []voterListener) (string, error) {
	if len(ls) == 0 {
		return "", fmt.Errorf("%w: the voter sent no listeners", kerr.InvalidRequest)
	}
	pick := ls[0]
	for _, l := range ls {
		if slices.Contains(b.cfg.ControllerListenerNames, l.Name) {
			pick = l
			break
		}
	}
	if pick.Host == "" || pick.Port == 0 {
		return "", fmt.Errorf("%w: listener %s has no host or port", kerr.InvalidRequest, pick.Name)
	}
	return net.JoinHostPort(pick.Host, strconv.Itoa(int(pick.Port))), nil
}
