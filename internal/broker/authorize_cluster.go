package broker

// The APIs whose whole request needs one operation on the cluster (Kafka's
// table): checked in Broker.Handle before the handler runs, and refused
// with CLUSTER_AUTHORIZATION_FAILED in the response's error code (per
// partition where the response has no top-level one).

import (
	"reflect"

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
	// The inter-broker RPCs, on the inter-broker listener (the quorum
	// port answers them as the control plane's).
	int16(kmsg.BrokerRegistration):   acl.OpClusterAction,
	int16(kmsg.BrokerHeartbeat):      acl.OpClusterAction,
	int16(kmsg.AlterPartition):       acl.OpClusterAction,
	int16(kmsg.AllocateProducerIDs):  acl.OpClusterAction,
	int16(kmsg.AssignReplicasToDirs): acl.OpClusterAction,
}

// clusterRefused returns the refusal of r if it needs an operation on the
// cluster its principal may not perform, else nil.
func (b *Broker) clusterRefused(r *server.Request) kmsg.Response {
	op, ok := clusterChecks[r.Key]
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
