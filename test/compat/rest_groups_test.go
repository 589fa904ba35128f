package compat

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRestV3Lags: the v3 lags and lag summary of a group are what
// `vltava groups describe` reports, partition by partition.
func TestRestV3Lags(t *testing.T) {
	t.Parallel()
	rb := startRestBroker(t)
	topic, group := uniqueTopic(t), uniqueTopic(t)+"-g"
	adm := newAdmin(t, rb.Broker)
	createTopic(t, adm, topic, 3, nil)
	ctx := testContext(t, 60*time.Second)
	var recs []*kgo.Record
	for i := 0; i < 30; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte(fmt.Sprint(i))})
	}
	cl2 := newClient(t, rb.Broker, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl2.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	commits := kadm.Offsets{}
	commits.AddOffset(topic, 0, 10, -1)
	commits.AddOffset(topic, 1, 4, -1)
	commits.AddOffset(topic, 2, 0, -1)
	if err := adm.CommitAllOffsets(ctx, group, commits); err != nil {
		t.Fatal(err)
	}

	var lags struct {
		Kind string `json:"kind"`
		Data []struct {
			Kind          string `json:"kind"`
			TopicName     string `json:"topic_name"`
			PartitionID   int32  `json:"partition_id"`
			CurrentOffset int64  `json:"current_offset"`
			LogEndOffset  int64  `json:"log_end_offset"`
			Lag           int64  `json:"lag"`
		} `json:"data"`
	}
	rb.mustJSON(t, http.MethodGet, rb.v3("/consumer-groups/"+group+"/lags"), "", nil, http.StatusOK, &lags)
	desc := groupsDescribe(t, rb.Broker, group)
	if lags.Kind != "KafkaConsumerLagList" || len(lags.Data) != 3 || len(desc.Offsets) != 3 {
		t.Fatalf("lags %+v; groups describe %+v", lags, desc)
	}
	cli := map[int32][3]int64{}
	for _, o := range desc.Offsets {
		cli[o.Partition] = [3]int64{o.CurrentOffset, o.LogEndOffset, o.Lag}
	}
	for _, l := range lags.Data {
		if l.Kind != "KafkaConsumerLag" || l.TopicName != topic || cli[l.PartitionID] != [3]int64{l.CurrentOffset, l.LogEndOffset, l.Lag} {
			t.Fatalf("REST lag %+v, groups describe %v", l, cli[l.PartitionID])
		}
	}
	if cli[0] != [3]int64{10, 10, 0} || cli[1] != [3]int64{4, 10, 6} || cli[2] != [3]int64{0, 10, 10} {
		t.Fatalf("groups describe: %v", cli)
	}

	var one struct {
		Lag int64 `json:"lag"`
	}
	rb.mustJSON(t, http.MethodGet, rb.v3("/consumer-groups/"+group+"/lags/"+topic+"/partitions/1"), "", nil, http.StatusOK, &one)
	if one.Lag != 6 {
		t.Fatalf("partition 1 lag %d", one.Lag)
	}
	var sum struct {
		Kind              string `json:"kind"`
		MaxLag            int64  `json:"max_lag"`
		TotalLag          int64  `json:"total_lag"`
		MaxLagTopicName   string `json:"max_lag_topic_name"`
		MaxLagPartitionID int32  `json:"max_lag_partition_id"`
	}
	rb.mustJSON(t, http.MethodGet, rb.v3("/consumer-groups/"+group+"/lag-summary"), "", nil, http.StatusOK, &sum)
	if sum.Kind != "KafkaConsumerGroupLagSummary" || sum.MaxLag != 10 || sum.TotalLag != 16 || sum.MaxLagTopicName != topic || sum.MaxLagPartitionID != 2 {
		t.Fatalf("lag summary: %+v", sum)
	}

	var g struct {
		Kind            string `json:"kind"`
		ConsumerGroupID string `json:"consumer_group_id"`
		State           string `json:"state"`
	}
	rb.mustJSON(t, http.MethodGet, rb.v3("/consumer-groups/"+group), "", nil, http.StatusOK, &g)
	if g.Kind != "KafkaConsumerGroup" || g.ConsumerGroupID != group || g.State != "EMPTY" {
		t.Fatalf("group: %+v", g)
	}
	rb.wantError(t, rb.do(t, http.MethodGet, rb.v3("/consumer-groups/"+group+"-none/lags"), "", nil), http.StatusNotFound, 40405)
}
