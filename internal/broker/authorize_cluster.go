package broker

// The APIs whose whole request needs one operation on the cluster (Kafka's
// table): checked in Broker.Handle before the handler runs, and refused
// with CLUSTER_AUTHORIZATION_FAILED in the response's error code (per
// partition where the response has no top-level one).

import (
	"reflect"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

var clusterChecks = map[int16]kmsg.ACLOperation{
	int16(kmsg.ElectLeaders):               acl.OpAlter,
	int16(kmsg.AlterPartitionAssignments):  acl.OpAlter,
	int16(kmsg.ListPartitionReassignments): acl.OpDescribe,
	int16(kmsg.UpdateFeatures):             acl.OpAlter,
	int16(kmsg.DescribeQuorum):             acl.OpDescribe,
	int16(kmsg.AddRaftVoter):               acl.OpAlter,
	int16(kmsg.RemoveRaftVoter):            acl.OpAlter,
	int16(kmsg.UpdateRaftVoter):            acl.OpClusterAction,
	int16(kmsg.AlterReplicaLogDirs):        acl.OpAlter,
	int16(kmsg.DescribeLogDirs):            acl.OpDescribe,
	int16(kmsg.DescribeClientQuotas):       acl.OpDescribeConfigs,
	int16(kmsg.AlterClientQuotas):          acl.OpAlterConfigs,
	// KIP-554: SCRAM credentials are cluster resources.
	int16(kmsg.DescribeUserSCRAMCredentials): acl.OpDescribe,
	int16(kmsg.AlterUserSCRAMCredentials):    acl.OpAlter,
	// A transaction coordinator writing markers (KafkaApis
	// handleWriteTxnMarkersRequest).
	int16(kmsg.WriteTxnMarkers): acl.OpClusterAction,
	// The inter-broker RPCs, on the inter-broker listener (the quorum
	// port answers them as the control plane's).
	int16(kmsg.BrokerRegistration):   acl.OpClusterAction,
	int16(kmsg.BrokerHeartbeat):      acl.OpClusterAction,
	int16(kmsg.AlterPartition):       acl.OpClusterAction,
	int16(kmsg.AllocateProducerIDs):  acl.OpClusterAction,
	int16(kmsg.AssignReplicasToDirs): acl.OpClusterAction,
}

// clusterCheck is the cluster operation r needs as a whole, if any.
func clusterCheck(r *server.Request) (kmsg.ACLOperation, bool) {
	if r.Key == int16(kmsg.AddPartitionsToTxn) && r.Version >= 4 {
		// KIP-890: v4+ comes from partition leaders verifying (or
		// adding) a producer's partitions, so Kafka asks CLUSTER_ACTION
		// instead of the client's WRITE checks (authorize_txn.go).
		return acl.OpClusterAction, true
	}
	op, ok := clusterChecks[r.Key]
	return op, ok
}

// clusterRefused returns the refusal of r if it needs an operation on the
// cluster its principal may not perform, else nil.
func (b *Broker) clusterRefused(r *server.Request) kmsg.Response {
	op, ok := clusterCheck(r)
	if !ok || b.allowedCluster(r, op) {
		return nil
	}
	resp := r.Body.ResponseKind()
	code := kerr.ClusterAuthorizationFailed.Code
	switch req := r.Body.(type) {
	case *kmsg.ElectLeadersRequest:
		// v0 has no top-level error: every partition carries it.
		out := resp.(*kmsg.ElectLeadersResponse)
		out.ErrorCode = code
		if r.Version == 0 {
			for _, t := range req.Topics {
				rt := kmsg.NewElectLeadersResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewElectLeadersResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
		}
		return out
	case *kmsg.AlterClientQuotasRequest:
		// Kafka answers every entry with the refusal.
		out := resp.(*kmsg.AlterClientQuotasResponse)
		for _, e := range req.Entries {
			re := kmsg.NewAlterClientQuotasResponseEntry()
			re.ErrorCode = code
			for _, c := range e.Entity {
				rc := kmsg.NewAlterClientQuotasResponseEntryEntity()
				rc.Type, rc.Name = c.Type, c.Name
				re.Entity = append(re.Entity, rc)
			}
			out.Entries = append(out.Entries, re)
		}
		return out
	case *kmsg.AlterReplicaLogDirsRequest:
		out := resp.(*kmsg.AlterReplicaLogDirsResponse)
		for _, d := range req.Dirs {
			for _, t := range d.Topics {
				rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
		}
		return out
	case *kmsg.WriteTxnMarkersRequest:
		// Kafka's error response: every partition of every marker.
		out := resp.(*kmsg.WriteTxnMarkersResponse)
		for _, m := range req.Markers {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			for _, t := range m.Topics {
				rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					rp.Partition, rp.ErrorCode = p, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				rm.Topics = append(rm.Topics, rt)
			}
			out.Markers = append(out.Markers, rm)
		}
		return out
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		// The top-level error, and each named user's result carries it.
		out := resp.(*kmsg.DescribeUserSCRAMCredentialsResponse)
		out.ErrorCode = code
		for _, u := range req.Users {
			res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			res.User, res.ErrorCode = u.Name, code
			out.Results = append(out.Results, res)
		}
		return out
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		// One result per user named, sorted, as Kafka's error response.
		out := resp.(*kmsg.AlterUserSCRAMCredentialsResponse)
		var users []string
		for _, d := range req.Deletions {
			users = append(users, d.Name)
		}
		for _, u := range req.Upsertions {
			users = append(users, u.Name)
		}
		slices.Sort(users)
		for _, u := range slices.Compact(users) {
			res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			res.User, res.ErrorCode = u, code
			out.Results = append(out.Results, res)
		}
		return out
	}
	// Every other response of the table has a top-level error code
	// (DescribeLogDirs before v3 does not: its answer is then empty, as
	// Kafka's).
	f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode")
	if !f.IsValid() {
		panic("clusterChecks lists " + kmsg.NameForKey(r.Key) + ", whose response has no ErrorCode")
	}
	f.SetInt(int64(code))
	return resp
}
