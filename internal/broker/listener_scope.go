package broker

// Which APIs a listener serves. Kafka decides per listener which APIs are
// enabled: a KRaft broker's listeners do not serve the broker-to-controller
// RPCs (KIP-631 BrokerRegistration and BrokerHeartbeat, AlterPartition,
// AllocateProducerIds), ApiVersions does not list them there, and a request
// for one is refused by closing the connection (SocketServer rejects an API
// the listener does not enable). Vltava's controllers serve them on the
// quorum port (ControllerHandler); a broker also answers them on its
// inter-broker listener, where only brokers are expected, and never on a
// client listener.
//
// Replica fetches (Fetch with a replica id >= 0, ReplicaState from v15,
// KIP-903) move the high watermark and the ISR, so they are answered only on
// the inter-broker listener too. Kafka answers a follower fetch its sender
// may not make (no ClusterAction) with TOPIC_AUTHORIZATION_FAILED for every
// partition; a replica fetch on a client listener gets the same answer.
//
// WriteTxnMarkers, which transaction coordinators send to partition
// leaders, is a broker API in Kafka on every broker listener: it is
// answered on a client listener too, and refused there as anywhere by the
// authorizer to a principal without CLUSTER_ACTION (authorize_cluster.go).
//
// With a single listener (the zero-config node, or every listener being the
// inter-broker one) nothing is refused.

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/server"
)

// interBrokerAPIs are served on the inter-broker listener only (and the
// controller APIs among them on the quorum port).
var interBrokerAPIs = map[int16]bool{
	int16(kmsg.BrokerRegistration):  true,
	int16(kmsg.BrokerHeartbeat):     true,
	int16(kmsg.AlterPartition):      true,
	int16(kmsg.AllocateProducerIDs): true,
}

// interBrokerListener is the name of the listener other brokers reach this
// one on, by the rule their follower fetchers use to pick it from this
// broker's registration (replication.Manager.leaderAddr):
// inter.broker.listener.name when this broker advertises it, else its first
// advertised listener.
func interBrokerListener(cfg *config.Broker) string {
	advertised := cfg.AdvertisedListeners
	if len(advertised) == 0 {
		for _, l := range cfg.Listeners {
			if !slices.Contains(cfg.ControllerListenerNames, l.Name) {
				advertised = append(advertised, l)
			}
		}
	}
	for _, l := range advertised {
		if strings.EqualFold(l.Name, cfg.InterBrokerListenerName) {
			return l.Name
		}
	}
	if len(advertised) > 0 {
		return advertised[0].Name
	}
	return cfg.InterBrokerListenerName
}

// onClientListener reports whether r arrived on a listener other than the
// inter-broker one. Requests made in-process (no connection) are not.
func (b *Broker) onClientListener(r *server.Request) bool {
	return r.Conn != nil && !strings.EqualFold(r.Conn.Listener, b.interBrokerListener)
}

// isReplicaFetch reports whether a Fetch comes from a follower replica.
func isReplicaFetch(r *server.Request) bool {
	req, ok := r.Body.(*kmsg.FetchRequest)
	if !ok {
		return false
	}
	if r.Version >= 15 {
		return req.ReplicaState.ID >= 0
	}
	return req.ReplicaID >= 0
}

// refusedReplicaFetch answers a replica fetch received on a client
// listener: every partition TOPIC_AUTHORIZATION_FAILED, nothing read, no
// follower position recorded, no fetch session.
func refusedReplicaFetch(r *server.Request) *kmsg.FetchResponse {
	req := r.Body.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.PreferredReadReplica = -1
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// withoutInterBrokerAPIs removes the inter-broker APIs from an ApiVersions
// answer given on a client listener: a client is not told of APIs it may
// not call there.
func withoutInterBrokerAPIs(resp kmsg.Response) {
	if av, ok := resp.(*kmsg.ApiVersionsResponse); ok {
		av.ApiKeys = slices.DeleteFunc(av.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool {
			return interBrokerAPIs[k.ApiKey]
		})
	}
}
