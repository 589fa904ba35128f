package node

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/broker"
	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/security/clientauth"
	"github.com/vltava/vltava/internal/storage"
	"github.com/vltava/vltava/internal/tiered"
	"github.com/vltava/vltava/internal/tiered/s3"
)

// s3StorageManagerClasses are the remote.log.storage.manager.class.name
// values served by the built-in S3 store: its own name and the widely used
// open-source plugin's, whose rsm.config.* keys it reads.
var s3StorageManagerClasses = map[string]bool{
	"": true,
	"io.vltava.tiered.S3RemoteStorageManager":           true,
	"io.aiven.kafka.tieredstorage.RemoteStorageManager": true,
}

// tieredNode is tiered storage on this node: the S3 store from the start,
// then, once the node serves, the metadata store and the remote log
// manager, started by a goroutine that retries until the cluster can
// create __remote_log_metadata.
type tieredNode struct {
	store *s3.Store
	mgr   atomic.Pointer[tiered.Manager] // nil until the metadata store is read
	log   *slog.Logger
	// The KIP-956 quotas, their rates set from each metadata image
	// (applyQuotas) as dynamic broker configs.
	copyQuota, fetchQuota *tiered.Quota

	cancel context.CancelFunc
	wg     sync.WaitGroup
	meta   *tiered.MetadataStore // set by the start goroutine, closed by close
	metaMu sync.Mutex
}

// newTieredNode checks the tiered storage settings and opens the S3 store;
// nil when remote.log.storage.system.enable is off. The bucket is not
// contacted here: an unreachable store pauses tiering (nothing is deleted
// locally that is not in it) rather than stopping the broker.
func newTieredNode(cfg *config.Broker, log *slog.Logger) (*tieredNode, error) {
	if !cfg.RemoteLogStorageSystemEnable {
		return nil, nil
	}
	if !s3StorageManagerClasses[cfg.RemoteLogStorageManagerClassName] {
		return nil, fmt.Errorf("remote.log.storage.manager.class.name=%s: the built-in S3 remote storage is the only one served (io.vltava.tiered.S3RemoteStorageManager)", cfg.RemoteLogStorageManagerClassName)
	}
	sc, err := s3.ParseConfig(cfg.RemoteStorageConfig)
	if err != nil {
		return nil, err
	}
	if sc.CacheDir == "" && len(cfg.LogDirs) > 0 {
		sc.CacheDir = filepath.Join(cfg.LogDirs[0], "remote-fetch-cache")
	}
	st, err := s3.New(context.Background(), sc)
	if err != nil {
		return nil, err
	}
	copyRate, fetchRate := cfg.RemoteLogQuotaRates(nil, nil)
	return &tieredNode{store: st, log: log,
		copyQuota: tiered.NewQuota(copyRate, int(cfg.RemoteCopyQuotaWindowNum),
			time.Duration(cfg.RemoteCopyQuotaWindowSeconds)*time.Second, nil),
		fetchQuota: tiered.NewQuota(fetchRate, int(cfg.RemoteFetchQuotaWindowNum),
			time.Duration(cfg.RemoteFetchQuotaWindowSeconds)*time.Second, nil),
	}, nil
}

// applyQuotas sets the copy and fetch rates in effect in img.
func (t *tieredNode) applyQuotas(cfg *config.Broker, img *metadata.Image) {
	if t == nil {
		return
	}
	copyRate, fetchRate := cfg.RemoteLogQuotaRates(img.BrokerConfig(strconv.Itoa(int(cfg.NodeID))), img.BrokerConfig(""))
	t.copyQuota.SetLimit(copyRate)
	t.fetchQuota.SetLimit(fetchRate)
}

// start runs the remote log manager once __remote_log_metadata exists and
// has been read to its end.
func (t *tieredNode) start(cfg *config.Broker, b *broker.Broker, parts *partition.Manager, image func() *metadata.Image, seed string, sec *clientauth.Security) {
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		if err := t.store.Check(ctx); err != nil {
			t.log.Error("remote storage unreachable; tiering waits for it", "err", err)
		}
		var meta *tiered.MetadataStore
		for backoff := 100 * time.Millisecond; ; backoff = min(backoff*2, 5*time.Second) {
			var err error
			meta, err = openRemoteMetadata(ctx, b, seed, sec)
			if err == nil {
				break
			}
			t.log.Warn("opening the remote log metadata", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
		t.metaMu.Lock()
		t.meta = meta
		t.metaMu.Unlock()
		m := &tiered.Manager{
			NodeID:     cfg.NodeID,
			Store:      t.store,
			Meta:       meta,
			Hosted:     parts.All,
			Interval:   time.Duration(cfg.RemoteLogManagerTaskIntervalMs) * time.Millisecond,
			Logger:     t.log,
			Now:        time.Now,
			CopyQuota:  t.copyQuota,
			FetchQuota: t.fetchQuota,
			TopicExists: func(id [16]byte) bool {
				_, ok := image().TopicByID(metadata.Uuid(id))
				return ok
			},
			// The lowest unfenced broker sweeps deleted topics' remote data.
			SweepOwner: func() bool {
				ids := image().UnfencedBrokerIDs()
				return len(ids) > 0 && ids[0] == cfg.NodeID
			},
		}
		t.mgr.Store(m)
		t.log.Info("tiered storage started")
		m.Run(ctx)
	}()
}

// openRemoteMetadata creates __remote_log_metadata if needed and reads it to
// its end, through a client of this broker's own listener.
func openRemoteMetadata(ctx context.Context, b *broker.Broker, seed string, sec *clientauth.Security) (*tiered.MetadataStore, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := b.EnsureRemoteLogMetadataTopic(cctx); err != nil {
		return nil, err
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(seed), kgo.ClientID("vltava-remote-log-metadata")}, sec.KgoOpts()...)
	meta, err := tiered.OpenMetadataStore(cctx, opts...)
	if err != nil {
		return nil, err
	}
	adm, err := kgo.NewClient(opts...)
	if err != nil {
		meta.Close()
		return nil, err
	}
	defer adm.Close()
	ends, err := kadm.NewClient(adm).ListEndOffsets(cctx, tiered.MetadataTopic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		meta.Close()
		return nil, err
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	if err := meta.CaughtUp(cctx, want); err != nil {
		meta.Close()
		return nil, err
	}
	return meta, nil
}

func (t *tieredNode) close() {
	if t == nil {
		return
	}
	if t.cancel != nil {
		t.cancel()
	}
	t.wg.Wait()
	t.metaMu.Lock()
	if t.meta != nil {
		t.meta.Close()
	}
	t.metaMu.Unlock()
	t.store.Close()
}

// errTieringNotReady is what a remote read gets before the metadata store
// has been read: the client retries.
var errTieringNotReady = fmt.Errorf("%w: tiered storage is starting", kerr.KafkaStorageError)

// Read implements broker.RemoteTier.
func (t *tieredNode) Read(ctx context.Context, p *partition.Partition, offset int64, maxBytes int, minOneBatch bool) ([]byte, error) {
	m := t.mgr.Load()
	if m == nil {
		return nil, errTieringNotReady
	}
	return m.Read(ctx, p, offset, maxBytes, minOneBatch)
}

// AbortedTransactions implements broker.RemoteTier.
func (t *tieredNode) AbortedTransactions(ctx context.Context, p *partition.Partition, from, upTo int64) ([]storage.AbortedTxn, error) {
	m := t.mgr.Load()
	if m == nil {
		return nil, errTieringNotReady
	}
	return m.AbortedTransactions(ctx, p, from, upTo)
}

// OffsetForTimestamp implements broker.RemoteTier.
func (t *tieredNode) OffsetForTimestamp(ctx context.Context, p *partition.Partition, ts int64) (int64, int64, int32, bool, error) {
	m := t.mgr.Load()
	if m == nil {
		return 0, 0, 0, false, errTieringNotReady
	}
	return m.OffsetForTimestamp(ctx, p, ts)
}
