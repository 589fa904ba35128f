package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
)

// awaitBrokersApplied is the last step of a topic change (CreateTopics,
// DeleteTopics, CreatePartitions) answered by the active controller: it
// waits until every live broker has applied the metadata committed so far,
// as each reports in its heartbeats (controller.Active.WaitBrokersApplied),
// so that Metadata from any broker right after the answer shows the change.
// Kafka answers once the records are committed and lets brokers catch up on
// their own; this is stricter.
//
// The wait is bounded by the request's timeout_ms, counted from when the
// request arrived. A timeout_ms of 0 or less asks for no wait, as Kafka
// brokers return at once then. When the wait ends before every broker has
// applied the change (a broker that died and is not yet fenced), the change
// is still committed: the request succeeded and is answered so, and the
// laggards are logged. A committed change is never reported as failed.
func (b *Broker) awaitBrokersApplied(ctx context.Context, r *server.Request, timeoutMillis int32) {
	if b.active == nil || timeoutMillis <= 0 {
		return
	}
	offset := b.meta.Image().Offset()
	start := r.Received
	if start.IsZero() {
		start = time.Now()
	}
	deadline := start.Add(time.Duration(timeoutMillis) * time.Millisecond)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if b.quorum != nil {
		b.quorum.PublishCommit()
	}
	lagging, err := b.active.WaitBrokersApplied(ctx, offset)
	if err != nil {
		b.log.Warn("metadata change committed but not yet applied by every live broker; answering anyway",
			"api", kmsg.NameForKey(r.Key), "offset", offset, "lagging", lagging, "timeout_ms", timeoutMillis, "err", err)
	}
}
