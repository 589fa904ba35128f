package broker

// Client quota enforcement (Kafka's ClientQuotaManager,
// ClientRequestQuotaManager; KIP-13, KIP-124, KIP-219). A client is its
// connection's principal name (the user entity; "ANONYMOUS" before any
// authentication, as Kafka's KafkaPrincipal.ANONYMOUS) and its request's
// client id. Each check first syncs the quota.Manager with the image (one
// atomic load and a comparison), and with no quota of a kind configured it
// stops there: the produce and fetch paths pay nothing else.
//
// Over its quota, a client gets its response at once with throttle_time_ms
// set, and the connection is muted for that long (server.ConnInfo.Throttle):
// KIP-219 clients wait that long themselves, and older clients, whose
// versions predate KIP-219 and which Kafka answered late instead, are held
// just the same because their next request is not read.
//
// - producer_byte_rate counts each Produce request's size, after it is
//   handled (acks=0 included: the mute still applies).
// - consumer_byte_rate counts each consumer Fetch response's record bytes;
//   the fetch is first bounded to what the quota allows in one window, and
//   a response that would exceed the quota is answered empty with the
//   throttle time and not counted, as Kafka does. Follower fetches are
//   never counted.
// - request_percentage counts the time a request was handled, less the
//   time a fetch long-poll or an acks=all produce spent parked, as a
//   percentage of one thread (Kafka counts its I/O and network thread
//   time). JoinGroup and SyncGroup, which park for a rebalance, the
//   inter-broker APIs, follower fetches and requests forwarded by other
//   brokers are exempt.

import (
	"context"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/controller"
	"github.com/vltava/vltava/internal/metrics"
	"github.com/vltava/vltava/internal/security/quota"
	"github.com/vltava/vltava/internal/server"
)

// newClientQuotas is the broker's quota.Manager for its windows.
func newClientQuotas(cfg *config.Broker) *quota.Manager {
	w := func(n, s int32) quota.Window {
		if n < 1 || s < 1 {
			return quota.DefaultWindow // a Broker assembled without a parsed config (tests)
		}
		return quota.Window{Samples: int(n), Size: time.Duration(s) * time.Second}
	}
	return quota.NewManager(quota.Config{
		Window:           w(cfg.QuotaWindowNum, cfg.QuotaWindowSizeSeconds),
		ControllerWindow: w(cfg.ControllerQuotaWindowNum, cfg.ControllerQuotaWindowSizeSeconds),
	})
}

// quotas is the Manager following the current image's quotas.
func (b *Broker) quotas() *quota.Manager { return b.clientQuotas.Sync(b.meta.Image().ClientQuotas()) }

// throttleMillis is a throttle as a response's throttle_time_ms.
func throttleMillis(d time.Duration) int32 {
	return int32(min(d.Milliseconds(), math.MaxInt32))
}

// throttleProduce counts a Produce request against the producer quota and
// mutes the connection when it is over; the throttle time in ms.
func (b *Broker) throttleProduce(r *server.Request) int32 {
	q := b.quotas()
	if !q.Enabled(quota.Produce) || r.ClientID == controller.ForwardClientID {
		return 0
	}
	d := q.Record(quota.Produce, r.Conn.Principal.Name, r.ClientID, float64(r.Size))
	if d > 0 {
		r.Conn.Throttle(d)
		metrics.QuotaThrottled("Produce", d)
	}
	return throttleMillis(d)
}

// fetchQuotaBytes bounds a consumer fetch's max bytes by what its quota
// allows in one window (Kafka's getMaxValueInQuotaWindow).
func (b *Broker) fetchQuotaBytes(r *server.Request, reader fetchReader, maxBytes int32) int32 {
	q := b.quotas()
	if reader.replicaID >= 0 || !q.Enabled(quota.Fetch) {
		return maxBytes
	}
	if limit, ok := q.MaxValueInWindow(quota.Fetch, r.Conn.Principal.Name, r.ClientID); ok && limit < float64(maxBytes) {
		return int32(max(limit, 1))
	}
	return maxBytes
}

// throttleFetch counts a consumer fetch response of size bytes against
// the consumer quota. Over the quota, the response is to be sent empty:
// the bytes are taken back and the connection muted; the throttle time.
func (b *Broker) throttleFetch(r *server.Request, reader fetchReader, size int) time.Duration {
	q := b.quotas()
	if reader.replicaID >= 0 || !q.Enabled(quota.Fetch) {
		return 0
	}
	user := r.Conn.Principal.Name
	d := q.Record(quota.Fetch, user, r.ClientID, float64(size))
	if d > 0 {
		q.Unrecord(quota.Fetch, user, r.ClientID, float64(size))
		r.Conn.Throttle(d)
		metrics.QuotaThrottled("Fetch", d)
	}
	return d
}

// requestQuotaExempt are the APIs request_percentage does not count.
var requestQuotaExempt = map[int16]bool{
	int16(kmsg.JoinGroup): true,
	int16(kmsg.SyncGroup): true,
	// A cluster action (Kafka's ApiKeys.clusterAction), from brokers.
	int16(kmsg.WriteTxnMarkers): true,
}

// parkedTime accumulates, for one request, the time it spent parked.
type parkedTime struct{ d time.Duration }

type parkedTimeKey struct{}

// parked adds the time since start to the request's parked time, if its
// handler time is being measured.
func parked(ctx context.Context, start time.Time) {
	if p, ok := ctx.Value(parkedTimeKey{}).(*parkedTime); ok {
		p.d += time.Since(start)
	}
}

// handleMeasured calls a handler, counting its time against the client's
// request_percentage quota when one applies, and sets the throttle in the
// response (the larger of it and a byte-rate throttle already set).
func (b *Broker) handleMeasured(ctx context.Context, a api, r *server.Request) (kmsg.Response, error) {
	q := b.quotas()
	if _, mutating := strictMutationVersion[r.Key]; mutating && q.Enabled(quota.ControllerMutation) {
		next := a.handle
		a.handle = func(b *Broker, ctx context.Context, r *server.Request) (kmsg.Response, error) {
			return b.handleMutationQuota(ctx, next, r)
		}
	}
	if !q.Enabled(quota.Request) || interBrokerAPIs[r.Key] || requestQuotaExempt[r.Key] ||
		r.ClientID == controller.ForwardClientID || (r.Key == int16(kmsg.Fetch) && isReplicaFetch(r)) {
		return a.handle(b, ctx, r)
	}
	p := &parkedTime{}
	start := time.Now()
	resp, err := a.handle(b, context.WithValue(ctx, parkedTimeKey{}, p), r)
	busy := time.Since(start) - p.d
	// Kafka's nanosToPercentage: percent of one thread, per second.
	d := q.Record(quota.Request, r.Conn.Principal.Name, r.ClientID, busy.Seconds()*100)
	if d > 0 {
		r.Conn.Throttle(d)
		metrics.QuotaThrottled("Request", d)
		if tr, ok := resp.(kmsg.ThrottleResponse); ok && err == nil {
			if cur, _ := tr.Throttle(); throttleMillis(d) > cur {
				resp.(kmsg.SetThrottleResponse).SetThrottle(throttleMillis(d))
			}
		}
	}
	return resp, err
}
