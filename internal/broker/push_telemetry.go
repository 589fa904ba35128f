package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
	"github.com/vltava/vltava/internal/telemetry"
)

// PushTelemetry (KIP-714): a client's metrics, OTLP MetricsData in
// protobuf, optionally compressed; re-exported on /metrics. Served only
// with telemetry.enable.

func init() { register(kmsg.PushTelemetry, 0, 0, (*Broker).handlePushTelemetry) }

func (b *Broker) handlePushTelemetry(_ context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.PushTelemetryRequest)
	resp := req.ResponseKind().(*kmsg.PushTelemetryResponse)
	if b.telemetry == nil {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	err := b.telemetry.Accept(telemetry.Push{
		ClientInstanceID: req.ClientInstanceID,
		SubscriptionID:   req.SubscriptionID,
		Terminating:      req.Terminating,
		CompressionType:  req.CompressionType,
		Metrics:          req.Metrics,
		ClientID:         r.ClientID,
	})
	resp.ErrorCode = b.errCode(err)
	return resp, nil
}
