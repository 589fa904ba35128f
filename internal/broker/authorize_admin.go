package broker

// Per-resource checks of the admin APIs that name many resources, done
// before the handler runs: the refused resources are taken out of the
// request (so a forwarded request carries only what this principal may
// change; the controller does not see the principal) and answered with
// their authorization error, the rest is handled as usual and the refusals
// are added to its answer. Kafka answers these APIs per resource the same
// way. The transaction APIs are checked by the same means
// (authorize_txn.go).

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

// resourceFilter removes the resources r may not act on from r.Body and
// returns how many remain and a function adding the refusals to the
// response.
type resourceFilter func(b *Broker, r *server.Request) (remaining int, finish func(kmsg.Response))

var resourceFilters = map[int16]resourceFilter{
	int16(kmsg.CreateTopics):            filterCreateTopics,
	int16(kmsg.DeleteTopics):            filterDeleteTopics,
	int16(kmsg.CreatePartitions):        filterCreatePartitions,
	int16(kmsg.DeleteRecords):           filterDeleteRecords,
	int16(kmsg.DescribeConfigs):         filterDescribeConfigs,
	int16(kmsg.AlterConfigs):            filterAlterConfigs,
	int16(kmsg.IncrementalAlterConfigs): filterIncrementalAlterConfigs,
	// The transaction APIs (authorize_txn.go).
	int16(kmsg.AddPartitionsToTxn):   filterAddPartitionsToTxn,
	int16(kmsg.AddOffsetsToTxn):      filterAddOffsetsToTxn,
	int16(kmsg.EndTxn):               filterEndTxn,
	int16(kmsg.TxnOffsetCommit):      filterTxnOffsetCommit,
	int16(kmsg.DescribeTransactions): filterDescribeTransactions,
	int16(kmsg.ListTransactions):     filterListTransactions,
	int16(kmsg.DescribeProducers):    filterDescribeProducers,
}

// handleFiltered runs a handler behind its resource filter.
func (b *Broker) handleFiltered(ctx context.Context, r *server.Request, h handlerFunc, f resourceFilter) (kmsg.Response, error) {
	remaining, finish := f(b, r)
	var resp kmsg.Response
	if remaining == 0 {
		resp = r.Body.ResponseKind() // every resource refused: nothing to run
	} else {
		var err error
		if resp, err = h(b, ctx, r); err != nil || resp == nil {
			return resp, err
		}
	}
	finish(resp)
	return resp, nil
}

// configRefusal is the error for a config resource r may not act on with
// op (DESCRIBE_CONFIGS or ALTER_CONFIGS), nil if allowed: topics and groups
// are checked on themselves, brokers and broker loggers on the cluster.
func (b *Broker) configRefusal(r *server.Request, typ kmsg.ConfigResourceType, name string, op kmsg.ACLOperation) *kerr.Error {
	switch int8(typ) {
	case metadata.ConfigResourceTopic:
		if !b.allowedTopic(r, name, op) {
			return kerr.TopicAuthorizationFailed
		}
	case metadata.ConfigResourceGroup:
		if !b.allowedGroup(r, name, op) {
			return kerr.GroupAuthorizationFailed
		}
	default: // broker (4), broker logger (8), client metrics (16)
		if !b.allowedCluster(r, op) {
			return kerr.ClusterAuthorizationFailed
		}
	}
	return nil
}

func filterCreateTopics(b *Broker, r *server.Request) (int, func(kmsg.Response)) {
	req := r.Body.(*kmsg.CreateTopicsRequest)
	var refused []kmsg.CreateTopicsResponseTopic
	req.Topics = slices.DeleteFunc(slices.Clone(req.Topics), func(t kmsg.CreateTopicsRequestTopic) bool {
		if b.mayCreateTopic(r, t.Topic) { // Kafka: CREATE on the cluster or the topic
			return false
		}
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic, st.NumPartitions, st.ReplicationFactor = t.Topic, -1, -1
		st.ErrorCode = kerr.TopicAuthorizationFailed.Code
		refused = append(refused, st)
		return true
	})
	return len(req.Topics), func(resp kmsg.Response) {
		out := resp.(*kmsg.CreateTopicsResponse)
		// A created topic's configs are returned only with
		// DESCRIBE_CONFIGS on it; else its config error says why (v5+).
		for i := range out.Topics {
			t := &out.Topics[i]
			if t.ErrorCode == 0 && !b.allowedTopic(r, t.Topic, acl.OpDescribeConfigs) {
				t.Configs, t.ConfigErrorCode = nil, kerr.TopicAuthorizationFailed.Code
			}
		}
		out.Topics = append(out.Topics, refused...)
	}
}

func filterDeleteTopics(b *Broker, r *server.Request) (int, func(kmsg.Response)) {
	req := r.Body.(*kmsg.DeleteTopicsRequest)
	img := b.meta.Image()
	var refused []kmsg.DeleteTopicsResponseTopic
	// Kafka: DESCRIBE and DELETE on the topic (a DENY of DESCRIBE refuses
	// though DELETE implies it); refused whether or not it exists.
	deny := func(name *string, id [16]byte) bool {
		n := ""
		if name != nil {
			n = *name
		} else if t, ok := img.TopicByID(metadata.Uuid(id)); ok {
			n = t.Name
		} else {
			return false // an unknown id: UNKNOWN_TOPIC_ID from the handler
		}
		if b.allowedTopic(r, n, acl.OpDescribe) && b.allowedTopic(r, n, acl.OpDelete) {
			return false
		}
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = name, id
		st.ErrorCode = kerr.TopicAuthorizationFailed.Code
		refused = append(refused, st)
		return true
	}
	n := 0
	if r.Version >= 6 {
		req.Topics = slices.DeleteFunc(slices.Clone(req.Topics), func(t kmsg.DeleteTopicsRequestTopic) bool { return deny(t.Topic, t.TopicID) })
		n = len(req.Topics)
	} else {
		req.TopicNames = slices.DeleteFunc(slices.Clone(req.TopicNames), func(t string) bool { return deny(&t, [16]byte{}) })
		n = len(req.TopicNames)
	}
	return n, func(resp kmsg.Response) {
		out := resp.(*kmsg.DeleteTopicsResponse)
		out.Topics = append(out.Topics, refused...)
	}
}

func filterCreatePartitions(b *Broker, r *server.Request) (int, func(kmsg.Response)) {
	req := r.Body.(*kmsg.CreatePartitionsRequest)
	var refused []kmsg.CreatePartitionsResponseTopic
	req.Topics = slices.DeleteFunc(slices.Clone(req.Topics), func(t kmsg.CreatePartitionsRequestTopic) bool {
		if b.allowedTopic(r, t.Topic, acl.OpAlter) { // Kafka: ALTER on the topic
			return false
		}
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic, st.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
		refused = append(refused, st)
		return true
	})
	return len(req.Topics), func(resp kmsg.Response) {
		out := resp.(*kmsg.CreatePartitionsResponse)
		out.Topics = append(out.Topics, refused...)
	}
}

func filterDeleteRecords(b *Broker, r *server.Request) (int, func(kmsg.Response)) {
	req := r.Body.(*kmsg.DeleteRecordsRequest)
	var refused []kmsg.DeleteRecordsResponseTopic
	req.Topics = slices.DeleteFunc(slices.Clone(req.Topics), func(t kmsg.DeleteRecordsRequestTopic) bool {
		if b.allowedTopic(r, t.Topic, acl.OpDelete) { // Kafka: DELETE on the topic
			return false
		}
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = t.Topic
		for _, p := range t.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark, sp.ErrorCode = p.Partition, -1, kerr.TopicAuthorizationFailed.Code
			st.Partitions = append(st.Partitions, sp)
		}
		refused = append(refused, st)
		return true
	})
	return len(req.Topics), func(resp kmsg.Response) {
		out := resp.(*kmsg.DeleteRecordsResponse)
		out.Topics = append(out.Topics, refused...)
	}
}

func filterDescribeConfigs(b *Broker, r *server.Request) (int, func(kmsg.Response)) {
	req := r.Body.(*kmsg.DescribeConfigsRequest)
	var refused []kmsg.DescribeConfigsResponseResource
	req.Resources = slices.DeleteFunc(slices.Clone(req.Resources), func(rr kmsg.DescribeConfigsRequestResource) bool {
		err := b.configRefusal(r, rr.ResourceType, rr.ResourceName, acl.OpDescribeConfigs)
		if err == nil {
			return false
		}
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName, sr.ErrorCode = rr.ResourceType, rr.ResourceName, err.Code
		refused = append(refused, sr)
		return true
	})
	return len(req.Resources), func(resp kmsg.Response) {
		out := resp.(*kmsg.DescribeConfigsResponse)
		out.Resources = append(out.Resources, refused...)
	}
}

func filterAlterConfigs(b *Broker, r *server.Request) (int, func(kmsg.Response)) {
	req := r.Body.(*kmsg.AlterConfigsRequest)
	var refused []kmsg.AlterConfigsResponseResource
	req.Resources = slices.DeleteFunc(slices.Clone(req.Resources), func(rr kmsg.AlterConfigsRequestResource) bool {
		err := b.configRefusal(r, rr.ResourceType, rr.ResourceName, acl.OpAlterConfigs)
		if err == nil {
			return false
		}
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName, sr.ErrorCode = rr.ResourceType, rr.ResourceName, err.Code
		refused = append(refused, sr)
		return true
	})
	return len(req.Resources), func(resp kmsg.Response) {
		out := resp.(*kmsg.AlterConfigsResponse)
		out.Resources = append(out.Resources, refused...)
	}
}

func filterIncrementalAlterConfigs(b *Broker, r *server.Request) (int, func(kmsg.Response)) {
	req := r.Body.(*kmsg.IncrementalAlterConfigsRequest)
	var refused []kmsg.IncrementalAlterConfigsResponseResource
	req.Resources = slices.DeleteFunc(slices.Clone(req.Resources), func(rr kmsg.IncrementalAlterConfigsRequestResource) bool {
		err := b.configRefusal(r, rr.ResourceType, rr.ResourceName, acl.OpAlterConfigs)
		if err == nil {
			return false
		}
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName, sr.ErrorCode = rr.ResourceType, rr.ResourceName, err.Code
		refused = append(refused, sr)
		return true
	})
	return len(req.Resources), func(resp kmsg.Response) {
		out := resp.(*kmsg.IncrementalAlterConfigsResponse)
		out.Resources = append(out.Resources, refused...)
	}
}
