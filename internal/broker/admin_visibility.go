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
// request arrived. A timeout_ms of 0 or less is what librdkafka sends by
// default (operation_timeout unset), meaning "do not wait for the change to
// propagate" in Kafka; the answer still waits, since the wait is what makes
// the change visible everywhere and takes a round trip on a healthy
// cluster, but at most broker.session.timeout.ms: a broker that cannot apply
// the change for that long is fenced by then and no longer counts. When the
// wait ends before every broker has applied the change (a broker hung but
// not yet fenced), the change is still committed: the request succeeded and
// is answered so, and the brokers behind are logged. A committed change is
// never reported as failed.
func (b *Broker) awaitBrokersApplied(ctx context.Context, r *server.Request, timeoutMillis int32) {
	if b.active == nil {
		return
	}
	bound := time.Duration(timeoutMillis) * time.Millisecond
	if timeoutMillis <= 0 {
		bound = time.Duration(b.cfg.BrokerSessionTimeoutMs) * time.Millisecond
	}
	start := r.Received
	if start.IsZero() {
		start = time.Now()
	}
	ctx, cancel := context.WithDeadline(ctx, start.Add(bound))
	defer cancel()
	if b.quorum != nil {
		b.quorum.PublishCommit()
	}
	offset := b.meta.Image().Offset()
	lagging, err := b.active.WaitBrokersApplied(ctx, offset)
	if err != nil {
		b.log.Warn("metadata change committed but not yet applied by every live broker; answering anyway",
			"api", kmsg.NameForKey(r.Key), "offset", offset, "lagging", lagging, "timeout", bound, "err", err)
	}
}
