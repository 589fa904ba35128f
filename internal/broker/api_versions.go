package broker

// ApiVersions (key 18), v0-v4.
//
// The table is built from the handlers' registrations. KIP-511: a client
// may send ApiVersions at a version newer than ours; the server decodes it
// as v0 and we answer at v0 with UNSUPPORTED_VERSION and the table, so the
// client can retry at a version we speak. v3+ requests carry the client's
// software name and version, which must match Kafka's pattern or the request
// is answered with INVALID_REQUEST.
//
// v3+ carries the features (KIP-584): the levels this binary supports
// (metadata.SupportedFeatures) and the cluster's finalized levels from the
// metadata image, with the image's offset as the finalized features epoch,
// as KRaft brokers report it. A supported feature whose lowest level is 0
// is listed only from v4: older clients (Kafka's Java clients before 3.9)
// fail to parse a supported range starting at 0, so Kafka leaves such
// features out of v0-v3 answers (KAFKA-17492).

import (
	"context"
	"maps"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.ApiVersions, 0, 4, (*Broker).handleApiVersions) }

// softwareNamePattern is Kafka's rule for client software names and
// versions (ApiVersionsRequest.isValid).
var softwareNamePattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (b *Broker) handleApiVersions(_ context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	_, maxV, _ := b.VersionRange(r.Key)
	switch {
	case r.Version > maxV:
		resp.SetVersion(0)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	case r.Version >= 3 && (!softwareNamePattern.MatchString(req.ClientSoftwareName) ||
		!softwareNamePattern.MatchString(req.ClientSoftwareVersion)):
		resp.ErrorCode = kerr.InvalidRequest.Code
	}
	resp.ApiKeys = apiVersionsTable()
	if resp.Version >= 3 {
		b.addFeatures(resp)
	}
	if b.groups != nil && !b.groups.ConsumerProtocolEnabled() {
		// group.coordinator.rebalance.protocols without "consumer":
		// the KIP-848 APIs are not advertised, as Kafka's
		// ApiVersionManager leaves them out.
		resp.ApiKeys = slices.DeleteFunc(resp.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool {
			return k.ApiKey == int16(kmsg.ConsumerGroupHeartbeat) || k.ApiKey == int16(kmsg.ConsumerGroupDescribe)
		})
	}
	if b.telemetry == nil {
		// KIP-714: without a telemetry receiver (telemetry.enable)
		// the client-metrics APIs are not advertised, as Kafka's
		// ApiVersionManager leaves them out.
		resp.ApiKeys = slices.DeleteFunc(resp.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool {
			return k.ApiKey == int16(kmsg.GetTelemetrySubscriptions) || k.ApiKey == int16(kmsg.PushTelemetry)
		})
	}
	return resp, nil
}

// addFeatures fills the KIP-584 fields of a v3+ answer.
func (b *Broker) addFeatures(resp *kmsg.ApiVersionsResponse) {
	for _, f := range metadata.SupportedFeatures() {
		if f.Min == 0 && resp.Version < 4 {
			continue
		}
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = f.Name, f.Min, f.Max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	}
	img := b.meta.Image()
	finalized := img.Features()
	if b.kraftVersion > 0 {
		// kraft.version is the quorum's (KIP-853), not a metadata record.
		finalized = maps.Clone(finalized)
		finalized[metadata.FeatureKRaftVersion] = b.kraftVersion
	}
	for _, name := range slices.Sorted(maps.Keys(finalized)) {
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = name, finalized[name], finalized[name]
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
	resp.FinalizedFeaturesEpoch = max(img.Offset(), 0)
}

// apiVersionsTable lists every registered API, sorted by key.
func apiVersionsTable() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]int16, 0, len(apis))
	for k := range apis {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]kmsg.ApiVersionsResponseApiKey, 0, len(keys))
	for _, k := range keys {
		a := apis[k]
		v := kmsg.NewApiVersionsResponseApiKey()
		v.ApiKey, v.MinVersion, v.MaxVersion = k, a.minVersion, a.maxVersion
		out = append(out, v)
	}
	return out
}
