package broker

// ApiVersions (key 18), v0-v4.
//
// The table is built from the handlers' registrations. KIP-511: a client
// may send ApiVersions at a version newer than ours; the server decodes it
// as v0 and we answer at v0 with UNSUPPORTED_VERSION and the table, so the
// client can retry at a version we speak. v3+ requests carry the client's
// software name and version, which must match Kafka's pattern or the request
// is answered with INVALID_REQUEST.

import (
	"context"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	if b.groups != nil && !b.groups.ConsumerProtocolEnabled() {
		// group.coordinator.rebalance.protocols without "consumer":
		// the KIP-848 APIs are not advertised, as Kafka's
		// ApiVersionManager leaves them out.
		resp.ApiKeys = slices.DeleteFunc(resp.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool {
			return k.ApiKey == int16(kmsg.ConsumerGroupHeartbeat) || k.ApiKey == int16(kmsg.ConsumerGroupDescribe)
		})
	}
	return resp, nil
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
