package broker

// DeleteTopics (key 20), v0-v6.
//
// Topics are named (v0-v5) or given by name or id (v6, KIP-516). Unknown
// names are UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID; with
// delete.topic.enable=false every deletion is TOPIC_DELETION_DISABLED. The
// logs of a deleted topic are removed when the broker applies the metadata
// change (partition.Manager). The controller answers once every live broker
// has applied the deletion, within timeout_ms (awaitBrokersApplied); a
// broker that forwarded the request, once the topics are gone from its own
// metadata.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.DeleteTopics, 0, 6, (*Broker).handleDeleteTopics) }

func (b *Broker) handleDeleteTopics(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	if fwd, ok := b.forwardToController(ctx, r); ok {
		resp := fwd.(*kmsg.DeleteTopicsResponse)
		b.awaitImage(ctx, func(img *metadata.Image) bool {
			for _, t := range resp.Topics {
				if _, ok := img.TopicByID(t.TopicID); t.ErrorCode == 0 && ok {
					return false
				}
			}
			return true
		})
		return resp, nil
	}
	req := r.Body.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)

	type entry struct {
		name *string
		id   [16]byte
	}
	var entries []entry
	if r.Version >= 6 {
		for _, t := range req.Topics {
			entries = append(entries, entry{name: t.Topic, id: t.TopicID})
		}
	} else {
		for _, n := range req.TopicNames {
			entries = append(entries, entry{name: &n})
		}
	}
	for _, e := range entries {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic = e.name
		st.TopicID = e.id
		var err error
		if !b.cfg.DeleteTopicEnable {
			err = kerr.TopicDeletionDisabled
		} else {
			var names []string
			var ids []metadata.Uuid
			if e.name != nil {
				names = []string{*e.name}
			} else {
				ids = []metadata.Uuid{metadata.Uuid(e.id)}
			}
			res := b.controller.DeleteTopics(ctx, names, ids)
			err = res[0].Err
			if err == nil {
				st.TopicID = res[0].TopicID
				if st.Topic == nil {
					name := res[0].Name
					st.Topic = &name
				}
			}
		}
		st.ErrorCode = b.errCode(err)
		if err != nil {
			st.ErrorMessage = errMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	b.awaitMetadata(ctx)
	if slices.ContainsFunc(resp.Topics, func(t kmsg.DeleteTopicsResponseTopic) bool { return t.ErrorCode == 0 }) {
		b.awaitBrokersApplied(ctx, r, req.TimeoutMillis)
	}
	return resp, nil
}
