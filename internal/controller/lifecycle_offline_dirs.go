package controller

import (
	"context"

	"github.com/vltava/vltava/internal/controller/rules"
)

// OfflineDirs is what a broker reports of its failed log dirs: their
// directory ids (BrokerHeartbeat's offline_log_dirs, KIP-858) and, per
// dir, the replicas there that the metadata still has this broker lead or
// keep in the ISR.
type OfflineDirs struct {
	DirIDs   [][16]byte
	Replicas map[[16]byte][]rules.ReplicaRef
}

// Poke sends a heartbeat now (after a log dir failed, so the controller
// hears of it without waiting for broker.heartbeat.interval.ms).
func (l *Lifecycle) Poke() { l.pokeNow() }

func (l *Lifecycle) offlineDirs() OfflineDirs {
	if l.o.OfflineDirs == nil {
		return OfflineDirs{}
	}
	return l.o.OfflineDirs()
}

// moveOfflineReplicas sends, after a heartbeat that reported the offline
// dirs, the assignment of the replicas still served from them to those
// dirs (AssignReplicasToDirs): the controller then elects other leaders and
// shrinks the ISRs. Kafka brokers send every placement this way; Vltava's
// controller does not track placements, so a broker sends only the ones in
// failed dirs, and again after every heartbeat until its metadata shows
// them moved (which also covers a controller change in between).
func (l *Lifecycle) moveOfflineReplicas(ctx context.Context, epoch int64, o OfflineDirs) {
	if len(o.Replicas) == 0 {
		return
	}
	results, err := l.o.Client.AssignReplicasToDirs(ctx, epoch, o.Replicas)
	if err != nil {
		if ctx.Err() == nil {
			l.logger.Warn("reporting replicas of offline log dirs", "err", err)
		}
		return
	}
	for ref, err := range results {
		if err != nil {
			l.logger.Warn("controller refused to move a replica of an offline log dir", "topic_id", ref.TopicID.String(), "partition", ref.Partition, "err", err)
		}
	}
}
