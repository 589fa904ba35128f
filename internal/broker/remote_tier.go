package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/storage"
)

// RemoteTier reads the remote tier of tiered partitions (KIP-405,
// internal/tiered). Its calls go to the object store: they are made on the
// fetching connection's goroutine with no partition or log lock held, each
// bounded by remote.fetch.max.wait.ms.
type RemoteTier interface {
	Read(ctx context.Context, p *partition.Partition, offset int64, maxBytes int, minOneBatch bool) ([]byte, error)
	AbortedTransactions(ctx context.Context, p *partition.Partition, from, upTo int64) ([]storage.AbortedTxn, error)
	OffsetForTimestamp(ctx context.Context, p *partition.Partition, ts int64) (offset, timestamp int64, epoch int32, ok bool, err error)
}

// RemoteLogMetadataTopic is where tiered storage keeps its segment metadata.
const RemoteLogMetadataTopic = "__remote_log_metadata"

// servesRemote reports whether offset of p is in its remote tier only.
func (b *Broker) servesRemote(p *partition.Partition, offset int64) bool {
	return b.remote != nil && p.Log().Config().RemoteStorageEnable &&
		offset < p.LogStartOffset() && offset >= p.Log().EarliestOffset()
}

func (b *Broker) remoteContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Duration(b.cfg.RemoteFetchMaxWaitMs)*time.Millisecond)
}

// readRemoteFetch answers a consumer's fetch below the local log start from
// the remote tier: the batches as bytes (no sendfile: they came over the
// network), and for read_committed the aborted transactions of the range
// from the remote and local transaction indexes.
func (b *Broker) readRemoteFetch(p *partition.Partition, rp *kmsg.FetchResponseTopicPartition, offset int64, limit int, first, readCommitted bool) {
	ctx, cancel := b.remoteContext()
	defer cancel()
	data, err := b.remote.Read(ctx, p, offset, max(limit, 0), first)
	if err != nil {
		switch {
		case errors.Is(err, kerr.OffsetOutOfRange):
			rp.ErrorCode = kerr.OffsetOutOfRange.Code
		default:
			b.log.Warn("remote fetch failed", "topic", p.Topic, "partition", p.Index, "offset", offset, "err", err)
			rp.ErrorCode = kerr.KafkaStorageError.Code
		}
		return
	}
	if readCommitted && len(data) > 0 {
		upTo := lastOffsetOf(data) + 1
		aborted, err := b.remote.AbortedTransactions(ctx, p, offset, upTo)
		if err != nil {
			rp.ErrorCode = kerr.KafkaStorageError.Code
			return
		}
		aborted = append(aborted, p.Log().AbortedTransactions(offset, upTo)...)
		for _, a := range aborted {
			at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
			rp.AbortedTransactions = append(rp.AbortedTransactions, at)
		}
	}
	rp.RecordBatches = data
}

// lastOffsetOf is the last offset of the last whole batch in data.
func lastOffsetOf(data []byte) int64 {
	last := int64(-1)
	for len(data) >= record.BatchHeaderSize {
		h, err := record.ParseHeader(data)
		if err != nil || 12+int(h.Length) > len(data) {
			break
		}
		last = h.LastOffset()
		data = data[12+int(h.Length):]
	}
	return last
}

// EnsureRemoteLogMetadataTopic creates __remote_log_metadata if it does not
// exist: rlmm.config.remote.log.metadata.topic.* partitions, replication
// factor (1 on a single-voter cluster without an explicit setting, as the
// other internal topics) and retention, cleanup.policy=delete as Kafka's.
func (b *Broker) EnsureRemoteLogMetadataTopic(ctx context.Context) error {
	return b.ensureInternalTopic(ctx, RemoteLogMetadataTopic, b.createRemoteLogMetadataTopic, func(*metadata.Image) {})
}

func (b *Broker) createRemoteLogMetadataTopic(ctx context.Context) error {
	img := b.meta.Image()
	if _, exists := img.Topic(RemoteLogMetadataTopic); exists {
		return nil
	}
	rf, live := int(b.cfg.RemoteLogMetadataTopicRF), len(img.ActiveBrokerIDs())
	if live < rf {
		return fmt.Errorf("%w: %s needs rlmm.config.remote.log.metadata.topic.replication.factor=%d brokers, %d are registered and unfenced",
			kerr.CoordinatorNotAvailable, RemoteLogMetadataTopic, rf, live)
	}
	del, retention := "delete", strconv.FormatInt(b.cfg.RemoteLogMetadataTopicRetention, 10)
	minISR := strconv.Itoa(min(rf, 2))
	res := b.createTopics(ctx, []rules.CreateTopic{{
		Name:              RemoteLogMetadataTopic,
		NumPartitions:     b.cfg.RemoteLogMetadataTopicPartitions,
		ReplicationFactor: int16(rf),
		Configs: map[string]*string{
			"cleanup.policy":      &del,
			"retention.ms":        &retention,
			"min.insync.replicas": &minISR,
		},
	}})
	if err := res[0].Err; err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating %s: %w", RemoteLogMetadataTopic, err)
	}
	b.log.Info("created the remote log metadata topic", "partitions", b.cfg.RemoteLogMetadataTopicPartitions, "replication.factor", rf)
	return nil
}
