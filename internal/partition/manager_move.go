package partition

import (
	"strconv"

	"github.com/vltava/vltava/internal/storage"
)

// moveThrottleKey is the dynamic broker config that throttles replica moves.
const moveThrottleKey = "replica.alter.log.dirs.io.max.bytes.per.second"

// applyMoveThrottle gives the storage Manager the effective throttle of
// replica moves: this broker's (or the cluster's) dynamic value, else the
// static one.
func (m *Manager) applyMoveThrottle(dynamic map[string]string) {
	rate := m.broker.ReplicaAlterLogDirsIOMaxBytesPerSecond
	if v, ok := dynamic[moveThrottleKey]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			rate = n
		}
	}
	m.store.SetMoveBytesPerSecond(rate)
}

// StartMove starts moving a hosted replica's log to the log dir dest in
// the background (AlterReplicaLogDirs); storage.Manager.MoveLog copies it
// while it serves. When the copy has taken over, the partition is replaced
// by one over the moved log with the same settings: requests that still
// hold the old one find its log closed (KAFKA_STORAGE_ERROR) or, parked, a
// removed partition (NOT_LEADER_OR_FOLLOWER), and retry on the new one; the
// log, its high watermark and its producer state move whole, so nothing
// acknowledged is lost and idempotent retries are recognised. It returns
// once the move is registered (storage.Manager.Moving reports it), or with
// the error that refuses it.
func (m *Manager) StartMove(p *Partition, dest string) error {
	tp := storage.TopicPartition{Topic: p.Topic, Partition: p.Index}
	run, err := m.store.BeginMove(tp, dest)
	if err != nil {
		return err
	}
	go func() {
		nl, err := run()
		if err != nil {
			m.log.Error("moving a replica to another log dir", "topic", p.Topic, "partition", p.Index, "dir", dest, "err", err)
			// A complete copy that could not be opened leaves the old
			// directory opened again as a new log: serve that one,
			// the old partition's log is closed.
			if nl = m.store.Get(tp); nl == nil {
				return
			}
		}
		if nl == p.log {
			return // already there, or the move failed with the log open
		}
		// Apply must not set the old partition's settings while they are
		// copied to the new one.
		m.applyMu.Lock()
		np := newPartition(p.Topic, p.Index, p.TopicID, nl, m.env)
		np.applySettings(p.settings.Load())
		m.mu.Lock()
		current := m.mu.parts[tp] == p
		if current {
			m.mu.parts[tp] = np
		}
		m.mu.Unlock()
		m.applyMu.Unlock()
		if !current {
			return // removed (or taken offline) meanwhile; the Manager handled its log
		}
		p.removed.Store(true)
		p.notify()
		if err == nil {
			m.log.Info("replica moved to another log dir", "topic", p.Topic, "partition", p.Index, "dir", dest)
		}
	}()
	return nil
}
