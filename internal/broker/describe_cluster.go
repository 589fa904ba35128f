package broker

// DescribeCluster (key 60), v0-v1.
//
// Lists the live brokers with their endpoint for the listener the request
// came in on, the cluster id and the controller. v1 adds endpoint_type
// (KIP-919): brokers answer for brokers (1); asking a broker for the
// controllers (2) is UNSUPPORTED_ENDPOINT_TYPE, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.DescribeCluster, 0, 1, (*Broker).handleDescribeCluster) }

func (b *Broker) handleDescribeCluster(_ context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterID = b.currentClusterID(b.meta.Image())
	resp.ControllerID = b.controllerID(b.meta.Image())
	resp.EndpointType = 1
	resp.ClusterAuthorizedOperations = authorizedOpsOmitted
	if !b.allowedCluster(r, acl.OpDescribe) { // Kafka: DESCRIBE on the cluster
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if r.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		resp.EndpointType = req.EndpointType
		return resp, nil
	}
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = b.authorizedOps(r, acl.ResourceCluster, acl.ClusterName)
	}
	for _, mb := range b.brokerEndpoints(b.meta.Image(), r.Conn.Listener) {
		db := kmsg.NewDescribeClusterResponseBroker()
		db.NodeID, db.Host, db.Port, db.Rack = mb.NodeID, mb.Host, mb.Port, mb.Rack
		resp.Brokers = append(resp.Brokers, db)
	}
	return resp, nil
}
