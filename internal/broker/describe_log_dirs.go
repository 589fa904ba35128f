package broker

// DescribeLogDirs (key 35), v0-v4.
//
// For each log dir: the partitions it holds (all of them when topics is
// null, else the ones asked for) with their size on disk and offset lag
// (0 for a leader: a replica's lag behind the high watermark). v3 adds a
// top-level error code, v4 the dir's total and usable bytes.

import (
	"context"
	"syscall"

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
	dirs := make(map[string]*kmsg.DescribeLogDirsResponseDir)
	for _, d := range b.cfg.LogDirs {
		sd := kmsg.NewDescribeLogDirsResponseDir()
		sd.Dir = d
		sd.TotalBytes, sd.UsableBytes = -1, -1
		var st syscall.Statfs_t
		if err := syscall.Statfs(d, &st); err == nil {
			sd.TotalBytes = int64(st.Blocks) * int64(st.Bsize)
			sd.UsableBytes = int64(st.Bavail) * int64(st.Bsize)
		}
		dirs[d] = &sd
	}
	topicIndex := make(map[string]map[string]int) // dir -> topic -> index
	for _, p := range b.partitions.All() {
		if wanted != nil && !wanted[p.Topic][p.Index] {
			continue
		}
		sd := dirs[store.DirOf(partitionKey(p))]
		if sd == nil {
			continue
		}
		idx := topicIndex[sd.Dir]
		if idx == nil {
			idx = make(map[string]int)
			topicIndex[sd.Dir] = idx
		}
		i, ok := idx[p.Topic]
		if !ok {
			t := kmsg.NewDescribeLogDirsResponseDirTopic()
			t.Topic = p.Topic
			sd.Topics = append(sd.Topics, t)
			i = len(sd.Topics) - 1
			idx[p.Topic] = i
		}
		sp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		sp.Partition = p.Index
		sp.Size = p.Log().Size()
		sd.Topics[i].Partitions = append(sd.Topics[i].Partitions, sp)
	}
	for _, d := range b.cfg.LogDirs {
		resp.Dirs = append(resp.Dirs, *dirs[d])
	}
	return resp, nil
}

func partitionKey(p *partition.Partition) storage.TopicPartition {
	return storage.TopicPartition{Topic: p.Topic, Partition: p.Index}
}
