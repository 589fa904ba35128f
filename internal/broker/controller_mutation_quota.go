package broker

// controller_mutation_rate (KIP-599): CreateTopics, CreatePartitions and
// DeleteTopics count the partitions they create or delete against the
// client's quota, a token bucket holding controller.quota.window.num ×
// controller.quota.window.size.seconds seconds' worth of the rate.
//
// A strict request (CreateTopics v6+, CreatePartitions v3+, DeleteTopics
// v5+, the versions whose clients understand the error) is taken topic by
// topic, as Kafka's controller does: a topic reached while the client is
// in debt is THROTTLING_QUOTA_EXCEEDED and not changed; any other takes its
// partitions from the bucket, which may go into debt (so a burst larger
// than the bucket passes once). Topics that then fail (an existing topic,
// a bad config) give their partitions back. Older versions are never
// refused; their successful mutations are counted. Either way the debt
// left is the response's throttle_time_ms, and the connection is muted for
// that long.
//
// Kafka applies the quota on the controller. Here the broker that received
// the request applies it before forwarding (the forwarded request does not
// carry the client's principal), so each broker keeps its own buckets.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metrics"
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
	costs := b.mutationCosts(b.meta.Image(), r)
	var resp kmsg.Response
	var err error
	if r.Version >= strictFrom {
		resp, err = b.strictMutations(ctx, next, r, q, costs)
	} else {
		if resp, err = next(b, ctx, r); err == nil {
			for i, failed := range topicErrors(resp) {
				if !failed && i < len(costs) {
					q.RecordMutations(user, r.ClientID, costs[i])
				}
			}
		}
	}
	if err != nil {
		return resp, err
	}
	if _, d := q.MutationAllowed(user, r.ClientID); d > 0 {
		r.Conn.Throttle(d)
		metrics.QuotaThrottled("ControllerMutation", d)
		if tr, ok := resp.(kmsg.ThrottleResponse); ok {
			if cur, _ := tr.Throttle(); throttleMillis(d) > cur {
				resp.(kmsg.SetThrottleResponse).SetThrottle(throttleMillis(d))
			}
		}
	}
	return resp, nil
}

// strictMutations takes a strict request topic by topic: topics reached in
// debt are refused, the others run as one request; failed ones give their
// partitions back.
func (b *Broker) strictMutations(ctx context.Context, next handlerFunc, r *server.Request, q *quota.Manager, costs []int) (kmsg.Response, error) {
	user := r.Conn.Principal.Name
	refused := make([]bool, len(costs))
	allowed := 0
	for i, n := range costs {
		if ok, _ := q.MutationAllowed(user, r.ClientID); !ok {
			refused[i] = true
			continue
		}
		q.RecordMutations(user, r.ClientID, n)
		allowed++
	}
	_, debt := q.MutationAllowed(user, r.ClientID)
	msg := fmt.Sprintf("The throttling quota has been exceeded. Retry after %d ms.", debt.Milliseconds())
	if allowed == 0 {
		return mergeMutations(r.Body, refused, nil, msg), nil
	}
	var sub *server.Request
	if allowed < len(costs) {
		s := *r
		s.Body = keepTopics(r.Body, refused)
		sub = &s
	} else {
		sub = r
	}
	resp, err := next(b, ctx, sub)
	if err != nil {
		return resp, err
	}
	// Give back what topics that failed took.
	errs := topicErrors(resp)
	k := 0
	for i := range costs {
		if refused[i] {
			continue
		}
		if k < len(errs) && errs[k] {
			q.RecordMutations(user, r.ClientID, -costs[i])
		}
		k++
	}
	if allowed == len(costs) {
		return resp, nil
	}
	return mergeMutations(r.Body, refused, resp, msg), nil
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

// mutationCosts is, for each topic of the request in order, the partitions
// it would create or delete, against the image before it (Kafka's counts:
// a new topic's partitions, a partition increase, a deleted topic's
// partitions).
func (b *Broker) mutationCosts(img *metadata.Image, r *server.Request) []int {
	current := func(name *string, id [16]byte) int {
		var t *metadata.TopicImage
		var ok bool
		if name != nil {
			t, ok = img.Topic(*name)
		} else {
			t, ok = img.TopicByID(metadata.Uuid(id))
		}
		if !ok {
			return 0
		}
		return len(t.Partitions)
	}
	var costs []int
	switch req := r.Body.(type) {
	case *kmsg.CreateTopicsRequest:
		for _, t := range req.Topics {
			switch {
			case len(t.ReplicaAssignment) > 0:
				costs = append(costs, len(t.ReplicaAssignment))
			case t.NumPartitions > 0:
				costs = append(costs, int(t.NumPartitions))
			default:
				costs = append(costs, int(b.cfg.NumPartitions))
			}
		}
	case *kmsg.CreatePartitionsRequest:
		for _, t := range req.Topics {
			costs = append(costs, max(int(t.Count)-current(&t.Topic, [16]byte{}), 0))
		}
	case *kmsg.DeleteTopicsRequest:
		if r.Version >= 6 {
			for _, t := range req.Topics {
				costs = append(costs, current(t.Topic, t.TopicID))
			}
		} else {
			for _, n := range req.TopicNames {
				costs = append(costs, current(&n, [16]byte{}))
			}
		}
	}
	return costs
}

// topicErrors reports, per topic of a mutating response in order, whether
// it failed.
func topicErrors(resp kmsg.Response) []bool {
	var out []bool
	switch resp := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		for _, t := range resp.Topics {
			out = append(out, t.ErrorCode != 0)
		}
	case *kmsg.CreatePartitionsResponse:
		for _, t := range resp.Topics {
			out = append(out, t.ErrorCode != 0)
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range resp.Topics {
			out = append(out, t.ErrorCode != 0)
		}
	}
	return out
}

// keepTopics is a copy of a mutating request without the refused topics.
func keepTopics(body kmsg.Request, refused []bool) kmsg.Request {
	switch req := body.(type) {
	case *kmsg.CreateTopicsRequest:
		c := *req
		c.Topics = nil
		for i, t := range req.Topics {
			if !refused[i] {
				c.Topics = append(c.Topics, t)
			}
		}
		return &c
	case *kmsg.CreatePartitionsRequest:
		c := *req
		c.Topics = nil
		for i, t := range req.Topics {
			if !refused[i] {
				c.Topics = append(c.Topics, t)
			}
		}
		return &c
	case *kmsg.DeleteTopicsRequest:
		c := *req
		c.Topics, c.TopicNames = nil, nil
		if req.Version >= 6 {
			for i, t := range req.Topics {
				if !refused[i] {
					c.Topics = append(c.Topics, t)
				}
			}
		} else {
			for i, n := range req.TopicNames {
				if !refused[i] {
					c.TopicNames = append(c.TopicNames, n)
				}
			}
		}
		return &c
	}
	panic("broker: not a mutating request")
}

// mergeMutations is the response to the whole request: refused topics
// THROTTLING_QUOTA_EXCEEDED, the others' answers (from ran, which answered
// them in order) in their places.
func mergeMutations(body kmsg.Request, refused []bool, ran kmsg.Response, msg string) kmsg.Response {
	code := kerr.ThrottlingQuotaExceeded.Code
	switch req := body.(type) {
	case *kmsg.CreateTopicsRequest:
		out := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		var done []kmsg.CreateTopicsResponseTopic
		if ran != nil {
			r := ran.(*kmsg.CreateTopicsResponse)
			out.ThrottleMillis, done = r.ThrottleMillis, r.Topics
		}
		for i, t := range req.Topics {
			if !refused[i] && len(done) > 0 {
				out.Topics, done = append(out.Topics, done[0]), done[1:]
				continue
			}
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.ErrorCode, st.ErrorMessage = t.Topic, code, &msg
			st.NumPartitions, st.ReplicationFactor = -1, -1
			out.Topics = append(out.Topics, st)
		}
		return out
	case *kmsg.CreatePartitionsRequest:
		out := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
		var done []kmsg.CreatePartitionsResponseTopic
		if ran != nil {
			r := ran.(*kmsg.CreatePartitionsResponse)
			out.ThrottleMillis, done = r.ThrottleMillis, r.Topics
		}
		for i, t := range req.Topics {
			if !refused[i] && len(done) > 0 {
				out.Topics, done = append(out.Topics, done[0]), done[1:]
				continue
			}
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic, st.ErrorCode, st.ErrorMessage = t.Topic, code, &msg
			out.Topics = append(out.Topics, st)
		}
		return out
	case *kmsg.DeleteTopicsRequest:
		out := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
		var done []kmsg.DeleteTopicsResponseTopic
		if ran != nil {
			r := ran.(*kmsg.DeleteTopicsResponse)
			out.ThrottleMillis, done = r.ThrottleMillis, r.Topics
		}
		type named struct {
			name *string
			id   [16]byte
		}
		var topics []named
		if req.Version >= 6 {
			for _, t := range req.Topics {
				topics = append(topics, named{t.Topic, t.TopicID})
			}
		} else {
			for _, n := range req.TopicNames {
				topics = append(topics, named{name: kmsg.StringPtr(n)})
			}
		}
		for i, t := range topics {
			if !refused[i] && len(done) > 0 {
				out.Topics, done = append(out.Topics, done[0]), done[1:]
				continue
			}
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.TopicID, st.ErrorCode, st.ErrorMessage = t.name, t.id, code, &msg
			out.Topics = append(out.Topics, st)
		}
		return out
	}
	panic("broker: not a mutating request")
}
