package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metrics"
)

// countFetched adds the answered fetch to BrokerTopicMetrics: per
// partition a fetch request, failed when it carries an error, and the bytes
// of records sent. A follower's fetch counts as ReplicationBytesOut only,
// as Kafka keeps replication out of BytesOutPerSec.
func countFetched(img *metadata.Image, out []kmsg.FetchResponseTopic, regions [][]fileRegion, replica bool) {
	if !metrics.Enabled() {
		return
	}
	var all uint64
	for ti := range out {
		t := out[ti].Topic
		if t == "" && !replica { // Fetch v13+ names topics by id
			if ti, ok := img.TopicByID(metadata.Uuid(out[ti].TopicID)); ok {
				t = ti.Name
			}
		}
		var tc *metrics.TopicCounters
		if _, known := img.Topic(t); known && !replica {
			tc = metrics.Topic(t) // only topics in the image: clients cannot grow the map
		}
		for pi := range out[ti].Partitions {
			rp := &out[ti].Partitions[pi]
			n := uint64(len(rp.RecordBatches))
			if ti < len(regions) && pi < len(regions[ti]) {
				n += uint64(regions[ti][pi].length)
			}
			all += n
			if replica {
				continue
			}
			metrics.AllTopics.TotalFetchRequests.Add(1)
			if rp.ErrorCode != 0 {
				metrics.AllTopics.FailedFetchRequests.Add(1)
			}
			if tc != nil {
				tc.TotalFetchRequests.Add(1)
				tc.BytesOut.Add(n)
				if rp.ErrorCode != 0 {
					tc.FailedFetchRequests.Add(1)
				}
			}
		}
	}
	if replica {
		metrics.AllTopics.ReplicationBytesOut.Add(all)
	} else {
		metrics.AllTopics.BytesOut.Add(all)
	}
}
