package partition

import (
	"slices"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/storage"
)

// OfflineReplica is a hosted replica whose log dir went offline.
type OfflineReplica struct {
	TopicID   [16]byte
	Topic     string
	Partition int32
	Dir       string
}

// HandleDirFailure takes the partitions of a failed log dir out of
// service (Kafka's ReplicaManager.handleLogDirFailure): they leave the
// hosted set, so fetchers stop fetching them, and produce and fetch find
// them offline (KAFKA_STORAGE_ERROR) until the broker restarts. Parked
// fetches and produces on them wake and recheck. It returns the replicas
// taken offline (with their topic ids when they were open) for the
// controller to move their leadership away.
func (m *Manager) HandleDirFailure(dir string, tps []storage.TopicPartition) []OfflineReplica {
	m.offline.Lock()
	if m.offline.tps == nil {
		m.offline.tps = make(map[storage.TopicPartition]bool)
	}
	for _, tp := range tps {
		m.offline.tps[tp] = true
	}
	m.offline.Unlock()

	out := make([]OfflineReplica, 0, len(tps))
	for _, tp := range tps {
		m.mu.Lock()
		p := m.mu.parts[tp]
		delete(m.mu.parts, tp)
		m.mu.Unlock()
		r := OfflineReplica{Topic: tp.Topic, Partition: tp.Partition, Dir: dir}
		if p != nil {
			r.TopicID = p.TopicID
			p.removed.Store(true)
			p.notify()
		}
		out = append(out, r)
	}
	m.log.Error("partitions offline after a log dir failure", "dir", dir, "partitions", len(out))
	return out
}

// Offline reports whether the partition's replica here is in an offline
// log dir.
func (m *Manager) Offline(topic string, index int32) bool {
	m.offline.Lock()
	defer m.offline.Unlock()
	return m.offline.tps[storage.TopicPartition{Topic: topic, Partition: index}]
}

// StillServedHere filters replicas down to those img still makes this
// broker the leader of, or keeps in the ISR: what the controller has yet
// to move away. Topic ids missing from replicas are filled from img.
func (m *Manager) StillServedHere(img *metadata.Image, replicas []OfflineReplica) []OfflineReplica {
	var out []OfflineReplica
	for _, r := range replicas {
		t, ok := img.Topic(r.Topic)
		if !ok || (r.TopicID != [16]byte{} && t.ID != metadata.Uuid(r.TopicID)) {
			continue // topic deleted (or deleted and created again)
		}
		r.TopicID = [16]byte(t.ID)
		if int(r.Partition) >= len(t.Partitions) || t.Partitions[r.Partition] == nil {
			continue
		}
		p := t.Partitions[r.Partition]
		// The last ISR member stays in the ISR (KIP-841) with no leader.
		if p.Leader == m.nodeID || (slices.Contains(p.ISR, m.nodeID) && len(p.ISR) > 1) {
			out = append(out, r)
		}
	}
	return out
}
