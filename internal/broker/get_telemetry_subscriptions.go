package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
	"github.com/vltava/vltava/internal/telemetry"
)

// GetTelemetrySubscriptions (KIP-714): the client metrics subscription a
// client is to push on, with the client instance id the broker assigns
// when the client has none. Served, and advertised in ApiVersions, only
// with telemetry.enable (a Kafka broker without a telemetry receiver does
// not advertise it either).

func init() {
	register(kmsg.GetTelemetrySubscriptions, 0, 0, (*Broker).handleGetTelemetrySubscriptions)
}

// TelemetryReceiver is what the client-metrics APIs need
// (internal/telemetry.Receiver).
type TelemetryReceiver interface {
	Subscribe(instanceID [16]byte, clientID string) telemetry.Subscription
	Accept(p telemetry.Push) error
}

func (b *Broker) handleGetTelemetrySubscriptions(_ context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := req.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	if b.telemetry == nil {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	s := b.telemetry.Subscribe(req.ClientInstanceID, r.ClientID)
	resp.ClientInstanceID = s.ClientInstanceID
	resp.SubscriptionID = s.SubscriptionID
	resp.AcceptedCompressionTypes = s.AcceptedCompressionTypes
	resp.PushIntervalMillis = s.PushIntervalMillis
	resp.TelemetryMaxBytes = s.TelemetryMaxBytes
	resp.DeltaTemporality = s.DeltaTemporality
	resp.RequestedMetrics = s.RequestedMetrics
	return resp, nil
}
