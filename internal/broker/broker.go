// Package broker answers the Kafka APIs. Each API lives in its own file,
// which opens with a comment on the versions and behaviour it implements and
// registers its handler and version range in init; ApiVersions answers from
// that registry, so the advertised table cannot drift from the code.
//
// Handlers translate internal errors into Kafka error codes (see errCode);
// nothing below this package speaks in codes.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/server"
)

// Broker serves the Kafka APIs of one node.
type Broker struct {
	cfg        *config.Broker
	nodeID     int32
	clusterID  string
	log        *slog.Logger
	meta       metadata.Log
	controller *metadata.Controller
	partitions *partition.Manager
	// groups is the group coordinator; nil on a broker assembled
	// without one (group APIs then answer COORDINATOR_NOT_AVAILABLE).
	groups *group.Coordinator

	fetchSessions *fetchSessionCache
	producerIDs   producerIDBlock

	// autoCreate serializes automatic topic creation so concurrent
	// metadata requests for one missing topic create it once.
	autoCreate sync.Mutex
}

// Options are the parts a Broker is assembled from.
type Options struct {
	Config     *config.Broker
	ClusterID  string
	Meta       metadata.Log
	Controller *metadata.Controller
	Partitions *partition.Manager
	Groups     *group.Coordinator
	Logger     *slog.Logger
}

// New assembles a Broker.
func New(o Options) *Broker {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Broker{
		cfg:           o.Config,
		nodeID:        o.Config.NodeID,
		clusterID:     o.ClusterID,
		log:           log,
		meta:          o.Meta,
		controller:    o.Controller,
		partitions:    o.Partitions,
		groups:        o.Groups,
		fetchSessions: newFetchSessionCache(int(o.Config.MaxIncrementalFetchSessionCacheSlots)),
	}
}

// handlerFunc answers one API. It returns the response to send (nil for
// none) or an error that closes the connection.
type handlerFunc func(b *Broker, ctx context.Context, r *server.Request) (kmsg.Response, error)

type api struct {
	minVersion, maxVersion int16
	handle                 handlerFunc
}

// apis is the registry, filled by each API file's init.
var apis = map[int16]api{}

// register declares that an API is served for versions [minV, maxV].
func register(key kmsg.Key, minV, maxV int16, fn handlerFunc) {
	if _, dup := apis[int16(key)]; dup {
		panic(fmt.Sprintf("API %s registered twice", key.Name()))
	}
	if maxV > kmsg.RequestForKey(int16(key)).MaxVersion() {
		panic(fmt.Sprintf("API %s registered up to v%d, beyond what kmsg decodes", key.Name(), maxV))
	}
	apis[int16(key)] = api{minVersion: minV, maxVersion: maxV, handle: fn}
}

// VersionRange implements server.Handler.
func (b *Broker) VersionRange(key int16) (int16, int16, bool) {
	a, ok := apis[key]
	return a.minVersion, a.maxVersion, ok
}

// Handle implements server.Handler.
func (b *Broker) Handle(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	a, ok := apis[r.Key]
	if !ok {
		return nil, fmt.Errorf("unsupported API key %d", r.Key)
	}
	return a.handle(b, ctx, r)
}

// awaitMetadata waits until this broker's partitions reflect the metadata
// committed so far, so an admin request answers only once its effect is
// visible here: a produce right after CreateTopics finds the partitions.
// A slow apply is not an error for the request that committed the change.
func (b *Broker) awaitMetadata(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.partitions.WaitApplied(ctx, b.meta.Image().Offset()); err != nil {
		b.log.Warn("metadata change not yet applied to partitions", "err", err)
	}
}

// errCode translates an internal error into a Kafka error code: errors
// wrapping a *kerr.Error carry their code; anything else is
// UNKNOWN_SERVER_ERROR, logged because it is a bug or an I/O failure.
func (b *Broker) errCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return kerr.RequestTimedOut.Code
	}
	b.log.Error("request failed with an internal error", "err", err)
	return kerr.UnknownServerError.Code
}

// errMessage is the message sent with an error code in responses that have
// a message field: the error's text for Kafka errors with detail, nil
// otherwise.
func errMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
