package controller

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
)

const assignReplicasToDirsVersion = 0

// AssignReplicasToDirs tells the controller which log dir holds each of
// the given replicas of this broker (KIP-858) and returns the controller's
// verdict per replica.
func (c *Client) AssignReplicasToDirs(ctx context.Context, epoch int64, dirs map[[16]byte][]rules.ReplicaRef) (map[rules.ReplicaRef]error, error) {
	var res map[rules.ReplicaRef]error
	req := kmsg.NewPtrAssignReplicasToDirsRequest()
	req.SetVersion(assignReplicasToDirsVersion)
	req.BrokerID, req.BrokerEpoch = c.o.NodeID, epoch
	for dir, refs := range dirs {
		d := kmsg.NewAssignReplicasToDirsRequestDirectory()
		d.ID = dir
		byTopic := map[metadata.Uuid]int{}
		for _, r := range refs {
			i, ok := byTopic[r.TopicID]
			if !ok {
				t := kmsg.NewAssignReplicasToDirsRequestDirectoryTopic()
				t.TopicID = r.TopicID
				d.Topics = append(d.Topics, t)
				i = len(d.Topics) - 1
				byTopic[r.TopicID] = i
			}
			p := kmsg.NewAssignReplicasToDirsRequestDirectoryTopicPartition()
			p.Partition = r.Partition
			d.Topics[i].Partitions = append(d.Topics[i].Partitions, p)
		}
		req.Directories = append(req.Directories, d)
	}
	err := c.call(ctx, func() error {
		var err error
		res, err = c.o.Active.AssignReplicasToDirs(ctx, c.o.NodeID, epoch, dirs)
		return err
	}, req, func(r kmsg.Response) error {
		resp := r.(*kmsg.AssignReplicasToDirsResponse)
		if err := codeErr(resp.ErrorCode, nil); err != nil {
			return err
		}
		res = map[rules.ReplicaRef]error{}
		for _, d := range resp.Directories {
			for _, t := range d.Topics {
				for _, p := range t.Partitions {
					res[rules.ReplicaRef{TopicID: t.TopicID, Partition: p.Partition}] = codeErr(p.ErrorCode, nil)
				}
			}
		}
		return nil
	})
	return res, err
}
