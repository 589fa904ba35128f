package broker

// AlterReplicaLogDirs (key 34), v1-v2 (v0 is below Kafka 4's baseline,
// KIP-896): move replicas on this broker to another of its log dirs
// (JBOD). The move runs in the background: the log is copied to a future
// log in the destination dir while it keeps serving, and takes over once it
// has caught up (DescribeLogDirs shows it as a future replica meanwhile).
// Per partition: LOG_DIR_NOT_FOUND for a dir not in log.dirs,
// KAFKA_STORAGE_ERROR while any log dir (or the partition) is offline,
// REPLICA_NOT_AVAILABLE for a partition not hosted here (its dir is
// remembered for when it is created here, as Kafka does).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
	"github.com/vltava/vltava/internal/storage"
)

func init() { register(kmsg.AlterReplicaLogDirs, 1, 2, (*Broker).handleAlterReplicaLogDirs) }

func (b *Broker) handleAlterReplicaLogDirs(_ context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterReplicaLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	store := b.partitions.Store()
	topicIndex := map[string]int{}
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			i, ok := topicIndex[t.Topic]
			if !ok {
				rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
				rt.Topic = t.Topic
				resp.Topics = append(resp.Topics, rt)
				i = len(resp.Topics) - 1
				topicIndex[t.Topic] = i
			}
			for _, idx := range t.Partitions {
				rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
				rp.Partition = idx
				rp.ErrorCode = b.errCode(b.alterReplicaLogDir(store, t.Topic, idx, d.Dir))
				resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
			}
		}
	}
	return resp, nil
}

// alterReplicaLogDir validates and starts one move.
func (b *Broker) alterReplicaLogDir(store *storage.Manager, topic string, index int32, dir string) error {
	dir, err := store.CheckMoveTarget(dir)
	if err != nil {
		return err
	}
	if b.partitions.Offline(topic, index) {
		return kerr.KafkaStorageError
	}
	p := b.partitions.Get(topic, index)
	if p == nil {
		// Not hosted (yet): remembered for its creation here; Kafka
		// answers REPLICA_NOT_AVAILABLE all the same.
		if err := store.PreferDir(storage.TopicPartition{Topic: topic, Partition: index}, dir); err != nil {
			return err
		}
		return kerr.ReplicaNotAvailable
	}
	if mv := store.Moving(partitionKey(p)); mv != nil {
		if mv.Dir == dir {
			return nil // already on its way there
		}
		// Kafka abandons a move for a new destination; this one finishes
		// first and the request can be repeated then.
		return kerr.ReplicaNotAvailable
	}
	return b.partitions.StartMove(p, dir)
}
