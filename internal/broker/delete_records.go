package broker

// DeleteRecords (key 21), v0-v2.
//
// Moves each partition's log start offset forward; offset -1 means the high
// watermark. Offsets beyond the high watermark, or negative ones other than
// -1, are OFFSET_OUT_OF_RANGE. Whole segments below the new log start are
// deleted; consumers reading from earliest start at the new low watermark,
// which the response returns.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.DeleteRecords, 0, 2, (*Broker).handleDeleteRecords) }

func (b *Broker) handleDeleteRecords(_ context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	img := b.meta.Image()
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			var p *partition.Partition
			t, ok := img.Topic(rt.Topic)
			err := error(kerr.UnknownTopicOrPartition)
			if ok {
				p, err = b.hostedPartition(img, t, rp.Partition, true)
			}
			if err == nil {
				var low int64
				if low, err = p.DeleteRecordsBefore(rp.Offset); err == nil {
					sp.LowWatermark = low
				}
			}
			sp.ErrorCode = b.errCode(err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
