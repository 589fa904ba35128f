package broker

// DescribeLogDirs (key 35), v0-v4.
//
// For each log dir (log.dirs, JBOD): the partitions it holds (all of them
// when topics is null, else the ones asked for) with their size on disk,
// offset lag (a replica's distance behind the high watermark: 0 for the
// leader, as Kafka computes it for its own replica) and whether it is a
// future replica; v3 adds a top-level error code, v4 the dir's total and
// usable bytes. A dir that went offline after a disk error is listed with
// KAFKA_STORAGE_ERROR and no partitions, as Kafka does.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/server"
	"github.com/vltava/vltava/internal/storage"
)

func init() { register(kmsg.DescribeLogDirs, 0, 4, (*Broker).handleDescribeLogDirs) }

func (b *Broker) handleDescribeLogDirs(_ context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)

	var wanted map[string]map[int32]bool
	if req.Topics != nil {
		wanted = make(map[string]map[int32]bool)
		for _, t := range req.Topics {
			ps := make(map[int32]bool)
			for _, p := range t.Partitions {
				ps[p] = true
			}
			wanted[t.Topic] = ps
		}
	}

	store := b.partitions.Store()
	infos := store.Dirs()
	dirs := make(map[string]*kmsg.DescribeLogDirsResponseDir, len(infos))
	for _, d := range infos {
		sd := kmsg.NewDescribeLogDirsResponseDir()
		sd.Dir = d.Path
		sd.TotalBytes, sd.UsableBytes = d.TotalBytes, d.UsableBytes
		if d.Offline {
			sd.ErrorCode = kerr.KafkaStorageError.Code
		}
		dirs[d.Path] = &sd
	}
	topicIndex := make(map[string]map[string]int) // dir -> topic -> index
	add := func(sd *kmsg.DescribeLogDirsResponseDir, topic string, sp kmsg.DescribeLogDirsResponseDirTopicPartition) {
		idx := topicIndex[sd.Dir]
		if idx == nil {
			idx = make(map[string]int)
			topicIndex[sd.Dir] = idx
		}
		i, ok := idx[topic]
		if !ok {
			t := kmsg.NewDescribeLogDirsResponseDirTopic()
			t.Topic = topic
			sd.Topics = append(sd.Topics, t)
			i = len(sd.Topics) - 1
			idx[topic] = i
		}
		sd.Topics[i].Partitions = append(sd.Topics[i].Partitions, sp)
	}
	for _, p := range b.partitions.All() {
		if wanted != nil && !wanted[p.Topic][p.Index] {
			continue
		}
		key := partitionKey(p)
		if sd := dirs[store.DirOf(key)]; sd != nil && sd.ErrorCode == 0 {
			sp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			sp.Partition = p.Index
			sp.Size = p.Log().Size()
			sp.OffsetLag = max(0, p.HighWatermark()-p.LogEndOffset())
			add(sd, p.Topic, sp)
		}
		// A replica being moved (AlterReplicaLogDirs) is also listed in
		// its destination as the future replica, lagging by what is left
		// to copy, as Kafka lists its future log.
		if mv := store.Moving(key); mv != nil {
			if sd := dirs[mv.Dir]; sd != nil && sd.ErrorCode == 0 {
				sp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
				sp.Partition = p.Index
				sp.Size = mv.CopiedBytes()
				sp.OffsetLag = max(0, p.LogEndOffset()-mv.CopiedOffset())
				sp.IsFuture = true
				add(sd, p.Topic, sp)
			}
		}
	}
	for _, d := range infos {
		resp.Dirs = append(resp.Dirs, *dirs[d.Path])
	}
	return resp, nil
}

func partitionKey(p *partition.Partition) storage.TopicPartition {
	return storage.TopicPartition{Topic: p.Topic, Partition: p.Index}
}
