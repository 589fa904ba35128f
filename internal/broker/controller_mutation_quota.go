package broker

// controller_mutation_rate (KIP-599): CreateTopics, CreatePartitions and
// DeleteTopics count the partitions they create or delete against the
// client's quota, a token bucket holding controller.quota.window.num ×
// controller.quota.window.size.seconds seconds' worth. A strict request
// (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+, the versions
// whose clients understand the error) made while the client is in debt
// changes nothing: every topic is THROTTLING_QUOTA_EXCEEDED with the time
// until the debt is repaid. Otherwise the request runs, its mutations are
// counted, and the debt it leaves is its throttle_time_ms (older versions
// are never refused, only throttled, as Kafka's permissive quota).
//
// Kafka applies the quota on the controller, topic by topic, so a request
// that goes into debt half-way has its later topics refused. Here the
// broker that received the request applies it, before forwarding, to the
// whole request: the debt is checked once, at its start, and each broker
// keeps its own buckets.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security/quota"
	"github.com/vltava/vltava/internal/server"
)

// strictMutationVersion is the first version of each mutating API whose
// clients handle THROTTLING_QUOTA_EXCEEDED.
var strictMutationVersion = map[int16]int16{
	int16(kmsg.CreateTopics):     6,
	int16(kmsg.CreatePartitions): 3,
	int16(kmsg.DeleteTopics):     5,
}

// handleMutationQuota runs a CreateTopics, CreatePartitions or DeleteTopics
// request under the client's controller mutation quota; other requests
// and clients without that quota go straight to the handler.
func (b *Broker) handleMutationQuota(ctx context.Context, next handlerFunc, r *server.Request) (kmsg.Response, error) {
	strictFrom, mutating := strictMutationVersion[r.Key]
	if !mutating || r.ClientID == controller.ForwardClientID || validateOnly(r.Body) {
		return next(b, ctx, r)
	}
	q := b.quotas()
	user := r.Conn.Principal.Name
	if _, _, ok := q.Quota(quota.ControllerMutation, user, r.ClientID); !ok {
		return next(b, ctx, r)
	}
	if r.Version >= strictFrom {
		if ok, d := q.MutationAllowed(user, r.ClientID); !ok {
			r.Conn.Throttle(d)
			return refuseMutations(r, d), nil
		}
	}
	before := b.meta.Image()
	resp, err := next(b, ctx, r)
	if err != nil {
		return resp, err
	}
	d := q.RecordMutations(user, r.ClientID, b.mutatedPartitions(before, r, resp))
	if d > 0 {
		r.Conn.Throttle(d)
		if tr, ok := resp.(kmsg.ThrottleResponse); ok {
			if cur, _ := tr.Throttle(); throttleMillis(d) > cur {
				resp.(kmsg.SetThrottleResponse).SetThrottle(throttleMillis(d))
			}
		}
	}
	return resp, nil
}

func validateOnly(req kmsg.Request) bool {
	switch req := req.(type) {
	case *kmsg.CreateTopicsRequest:
		return req.ValidateOnly
	case *kmsg.CreatePartitionsRequest:
		return req.ValidateOnly
	}
	return false
}

// refuseMutations answers every topic of a strict request
// THROTTLING_QUOTA_EXCEEDED.
func refuseMutations(r *server.Request, d time.Duration) kmsg.Response {
	msg := fmt.Sprintf("The throttling quota has been exceeded. Retry after %d ms.", d.Milliseconds())
	code := kerr.ThrottlingQuotaExceeded.Code
	switch req := r.Body.(type) {
	case *kmsg.CreateTopicsRequest:
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		resp.ThrottleMillis = throttleMillis(d)
		for _, t := range req.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.ErrorCode, st.ErrorMessage = t.Topic, code, &msg
			st.NumPartitions, st.ReplicationFactor = -1, -1
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.CreatePartitionsRequest:
		resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
		resp.ThrottleMillis = throttleMillis(d)
		for _, t := range req.Topics {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic, st.ErrorCode, st.ErrorMessage = t.Topic, code, &msg
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.DeleteTopicsRequest:
		resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
		resp.ThrottleMillis = throttleMillis(d)
		for _, t := range req.Topics {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.TopicID, st.ErrorCode, st.ErrorMessage = t.Topic, t.TopicID, code, &msg
			resp.Topics = append(resp.Topics, st)
		}
		for _, name := range req.TopicNames {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.ErrorCode, st.ErrorMessage = kmsg.StringPtr(name), code, &msg
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
	panic("broker: not a mutating request")
}

// mutatedPartitions counts the partitions a successful part of the
// request created or deleted, against the image from before it.
func (b *Broker) mutatedPartitions(before *metadata.Image, r *server.Request, resp kmsg.Response) int {
	partitions := func(name *string, id [16]byte) int {
		if name != nil {
			if t, ok := before.Topic(*name); ok {
				return len(t.Partitions)
			}
			return 0
		}
		if t, ok := before.TopicByID(metadata.Uuid(id)); ok {
			return len(t.Partitions)
		}
		return 0
	}
	n := 0
	switch resp := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		req := r.Body.(*kmsg.CreateTopicsRequest)
		for i, t := range resp.Topics {
			if t.ErrorCode != 0 || i >= len(req.Topics) {
				continue
			}
			switch rt := req.Topics[i]; {
			case t.NumPartitions > 0:
				n += int(t.NumPartitions)
			case len(rt.ReplicaAssignment) > 0:
				n += len(rt.ReplicaAssignment)
			case rt.NumPartitions > 0:
				n += int(rt.NumPartitions)
			default:
				n += int(b.cfg.NumPartitions)
			}
		}
	case *kmsg.CreatePartitionsResponse:
		req := r.Body.(*kmsg.CreatePartitionsRequest)
		for i, t := range resp.Topics {
			if t.ErrorCode == 0 && i < len(req.Topics) {
				n += max(int(req.Topics[i].Count)-partitions(&t.Topic, [16]byte{}), 0)
			}
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range resp.Topics {
			if t.ErrorCode == 0 {
				n += partitions(t.Topic, t.TopicID)
			}
		}
	}
	return n
}
