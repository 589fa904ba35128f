package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/storage"
)

// Manager keeps this broker's partitions in step with the metadata image:
// it opens the logs of partitions assigned here, applies topic config
// changes, and deletes the logs of removed topics.
//
// Apply calls are serialized; lookups (Get) are concurrent with them.
type Manager struct {
	nodeID int32
	broker *config.Broker
	store  *storage.Manager
	log    *slog.Logger
	env    *env

	mu struct {
		sync.RWMutex
		parts map[storage.TopicPartition]*Partition
	}

	// applyMu serializes Apply (the metadata subscriber and start-up both
	// call it) and guards last.
	applyMu sync.Mutex
	// last is what the previous Apply saw.
	last struct {
		topics  map[string]appliedTopic
		dynamic map[string]string
	}

	// applied tracks the offset of the last image applied, so a request
	// that changed metadata can wait until its partitions exist here.
	applied struct {
		sync.Mutex
		offset  int64
		changed chan struct{} // closed and replaced on every Apply
	}

	// offline are the partitions whose log dir went offline
	// (manager_offline.go); Apply does not open them again.
	offline struct {
		sync.Mutex
		tps map[storage.TopicPartition]bool
	}
}

// NewManager returns a Manager over the logs in store.
func NewManager(nodeID int32, broker *config.Broker, store *storage.Manager, log *slog.Logger) *Manager {
	m := &Manager{nodeID: nodeID, broker: broker, store: store, log: log}
	m.env = &env{nodeID: nodeID, now: time.Now, lagMax: time.Duration(broker.ReplicaLagTimeMaxMs) * time.Millisecond, logger: log}
	m.mu.parts = make(map[storage.TopicPartition]*Partition)
	m.last.topics = make(map[string]appliedTopic)
	m.applied.offset = -1
	m.applied.changed = make(chan struct{})
	return m
}

// WaitApplied waits until an image at or past offset has been applied, so
// that, for example, the partitions of a topic just created are open before
// CreateTopics answers and a produce that follows finds them.
func (m *Manager) WaitApplied(ctx context.Context, offset int64) error {
	for {
		m.applied.Lock()
		done, ch := m.applied.offset >= offset, m.applied.changed
		m.applied.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (m *Manager) appliedOffset() int64 {
	m.applied.Lock()
	defer m.applied.Unlock()
	return m.applied.offset
}

func (m *Manager) markApplied(offset int64) {
	m.applied.Lock()
	if offset > m.applied.offset {
		m.applied.offset = offset
		close(m.applied.changed)
		m.applied.changed = make(chan struct{})
	}
	m.applied.Unlock()
}

// Get returns the partition if it is hosted here.
func (m *Manager) Get(topic string, index int32) *Partition {
	m.mu.RLock()
	p := m.mu.parts[storage.TopicPartition{Topic: topic, Partition: index}]
	m.mu.RUnlock()
	return p
}

// All returns every hosted partition, sorted by topic and index.
func (m *Manager) All() []*Partition {
	m.mu.RLock()
	ps := slices.Collect(maps.Values(m.mu.parts))
	m.mu.RUnlock()
	slices.SortFunc(ps, func(a, b *Partition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Index - b.Index)
	})
	return ps
}

// Store returns the storage manager.
func (m *Manager) Store() *storage.Manager { return m.store }

// Apply reconciles the hosted partitions with img. It is incremental: a
// topic whose image (shared between images while unchanged) and config are
// the same as at the last Apply is skipped, so a metadata change costs in
// proportion to what changed, not to the number of topics. Logs of new
// partitions are opened in parallel (storage.Manager.OpenAll), which is
// what makes a start with thousands of partitions quick.
func (m *Manager) Apply(img *metadata.Image) error {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	if img.Offset() <= m.appliedOffset() && img.Offset() >= 0 {
		return nil // an older image than one already applied
	}
	dynamic := m.dynamicBrokerConfig(img)
	m.applyMoveThrottle(dynamic)
	dynamicChanged := !maps.Equal(dynamic, m.last.dynamic)
	seen := make(map[string]bool, img.NumTopics())
	var errs []error
	var opens []storage.OpenRequest
	pending := make(map[storage.TopicPartition]*settings)
	for _, t := range img.Topics() {
		seen[t.Name] = true
		overrides := img.TopicConfig(t.Name)
		prev, known := m.last.topics[t.Name]
		if known && prev.image == t && !dynamicChanged && maps.Equal(prev.overrides, overrides) {
			continue
		}
		if known && prev.image.ID != t.ID {
			// Same name, new topic: the old logs go first.
			errs = append(errs, m.removeTopic(prev.image))
		}
		m.last.topics[t.Name] = appliedTopic{image: t, overrides: overrides}
		topicCfg, err := config.ResolveTopic(m.broker, dynamic, overrides)
		if err != nil {
			errs = append(errs, fmt.Errorf("topic %s: %w", t.Name, err))
			continue
		}
		validate := ValidateOptions(topicCfg)
		hosted := make(map[int32]bool, len(t.Partitions))
		for _, pi := range t.Partitions {
			if !slices.Contains(pi.Replicas, m.nodeID) {
				continue
			}
			hosted[pi.Partition] = true
			tp := storage.TopicPartition{Topic: t.Name, Partition: pi.Partition}
			if m.Offline(t.Name, pi.Partition) {
				continue
			}
			s := &settings{
				topic:          topicCfg,
				validate:       validate,
				leaderEpoch:    pi.LeaderEpoch,
				partitionEpoch: pi.PartitionEpoch,
				leader:         pi.Leader,
				replicas:       pi.Replicas,
				isr:            pi.ISR,
			}
			s.validate.Partition = fmt.Sprintf("%s-%d", t.Name, pi.Partition) // named in KIP-467 record errors
			if p := m.Get(t.Name, pi.Partition); p != nil {
				if old := p.settings.Load(); !reflect.DeepEqual(old.topic, topicCfg) {
					p.log.UpdateConfig(StorageConfig(topicCfg, m.broker))
				}
				p.applySettings(s)
				continue
			}
			pending[tp] = s
			opens = append(opens, storage.OpenRequest{TP: tp, TopicID: t.ID, Cfg: StorageConfig(topicCfg, m.broker)})
		}
		// Partitions no longer assigned here (reassignment, later).
		if known {
			for _, p := range m.topicPartitions(t.Name) {
				if !hosted[p.Index] {
					errs = append(errs, m.remove(storage.TopicPartition{Topic: t.Name, Partition: p.Index}))
				}
			}
		}
	}
	for name, prev := range m.last.topics {
		if !seen[name] {
			delete(m.last.topics, name)
			errs = append(errs, m.removeTopic(prev.image))
		}
	}
	m.last.dynamic = dynamic

	if len(opens) > 0 {
		logs, err := m.store.OpenAll(opens, 0)
		if err != nil {
			errs = append(errs, fmt.Errorf("opening logs: %w", err))
		}
		for _, req := range opens {
			l := logs[req.TP]
			if l == nil {
				continue
			}
			p := newPartition(req.TP.Topic, req.TP.Partition, req.TopicID, l, m.env)
			p.applySettings(pending[req.TP])
			m.mu.Lock()
			m.mu.parts[req.TP] = p
			m.mu.Unlock()
		}
	}
	m.markApplied(img.Offset())
	return errors.Join(errs...)
}

// appliedTopic is what the last Apply saw of a topic.
type appliedTopic struct {
	image     *metadata.TopicImage
	overrides map[string]string
}

// topicPartitions returns the hosted partitions of a topic.
func (m *Manager) topicPartitions(topic string) []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*Partition
	for tp, p := range m.mu.parts {
		if tp.Topic == topic {
			out = append(out, p)
		}
	}
	return out
}

// removeTopic removes every hosted partition of a topic's image.
func (m *Manager) removeTopic(t *metadata.TopicImage) error {
	var errs []error
	for _, pi := range t.Partitions {
		errs = append(errs, m.remove(storage.TopicPartition{Topic: t.Name, Partition: pi.Partition}))
	}
	return errors.Join(errs...)
}

// RemoveStray deletes logs found on disk that the image does not assign to
// this broker (a topic deleted while the broker was down).
func (m *Manager) RemoveStray() error {
	var errs []error
	for _, tp := range m.store.Existing() {
		if m.Get(tp.Topic, tp.Partition) == nil {
			m.log.Info("deleting stray log not in the metadata image", "topic", tp.Topic, "partition", tp.Partition)
			if err := m.store.Delete(tp); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) remove(tp storage.TopicPartition) error {
	m.mu.Lock()
	p := m.mu.parts[tp]
	delete(m.mu.parts, tp)
	m.mu.Unlock()
	if p == nil {
		return nil
	}
	// Parked fetches and produces recheck and find the partition gone.
	p.removed.Store(true)
	p.notify()
	if err := m.store.Delete(tp); err != nil {
		return fmt.Errorf("deleting log %s-%d: %w", tp.Topic, tp.Partition, err)
	}
	return nil
}

// dynamicBrokerConfig merges the dynamic cluster-wide broker defaults with
// this broker's own dynamic overrides, which take precedence.
func (m *Manager) dynamicBrokerConfig(img *metadata.Image) map[string]string {
	merged := maps.Clone(img.BrokerConfig(""))
	if merged == nil {
		merged = make(map[string]string)
	}
	maps.Copy(merged, img.BrokerConfig(strconv.Itoa(int(m.nodeID))))
	return merged
}

// ValidateOptions derives the produce validation settings from a topic's
// config.
func ValidateOptions(t config.Topic) record.ValidateOptions {
	o := record.ValidateOptions{
		MaxMessageBytes:      int(t.MaxMessageBytes),
		TimestampType:        record.CreateTime,
		TimestampBeforeMaxMs: t.MessageTimestampBeforeMaxMs,
		TimestampAfterMaxMs:  t.MessageTimestampAfterMaxMs,
		Compacted:            t.CleanupPolicyCompact,
		KeepBaseOffset:       t.PreserveOffsets,
	}
	if t.MessageTimestampType == "LogAppendTime" {
		o.TimestampType = record.LogAppendTime
	}
	switch t.CompressionType {
	case "producer", "":
		o.KeepProducerCodec = true
	case "uncompressed":
		o.TargetCodec = record.CodecNone
	case "gzip":
		o.TargetCodec, o.TargetLevel = record.CodecGzip, record.Level(t.CompressionGzipLevel)
	case "snappy":
		o.TargetCodec = record.CodecSnappy
	case "lz4":
		o.TargetCodec, o.TargetLevel = record.CodecLZ4, record.Level(t.CompressionLz4Level)
	case "zstd":
		o.TargetCodec, o.TargetLevel = record.CodecZstd, record.Level(t.CompressionZstdLevel)
	}
	return o
}

// StorageConfig derives a log's settings from a topic's config.
func StorageConfig(t config.Topic, b *config.Broker) storage.Config {
	return storage.Config{
		SegmentBytes:           t.SegmentBytes,
		SegmentMs:              t.SegmentMs,
		SegmentJitterMs:        t.SegmentJitterMs,
		SegmentIndexBytes:      t.SegmentIndexBytes,
		IndexIntervalBytes:     t.IndexIntervalBytes,
		RetentionMs:            t.RetentionMs,
		RetentionBytes:         t.RetentionBytes,
		FlushMessages:          t.FlushMessages,
		FlushMs:                t.FlushMs,
		FileDeleteDelayMs:      t.FileDeleteDelayMs,
		Compact:                t.CleanupPolicyCompact,
		Delete:                 t.CleanupPolicyDelete,
		ProducerIDExpirationMs: int64(b.ProducerIDExpirationMs),
		MinCleanableDirtyRatio: t.MinCleanableDirtyRatio,
		MinCompactionLagMs:     t.MinCompactionLagMs,
		MaxCompactionLagMs:     t.MaxCompactionLagMs,
		DeleteRetentionMs:      t.DeleteRetentionMs,
		RemoteStorageEnable:    t.RemoteStorageEnable && b.RemoteLogStorageSystemEnable,
		LocalRetentionMs:       t.LocalRetentionMs,
		LocalRetentionBytes:    t.LocalRetentionBytes,
	}
}
