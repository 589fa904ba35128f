package compat

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/poll"
)

// TestRestMetadataAndMembers: the resources the other REST tests do not
// reach, against the documented shapes: v3 cluster, broker and its
// configs, the cluster-wide broker configs, the consumer-group list and a
// group's consumers and their assignments (a v2 consumer instance as the
// member); v2 topic, partition and broker metadata; and a v2 seek to the
// end, after which only what is produced next is returned.
func TestRestMetadataAndMembers(t *testing.T) {
	t.Parallel()
	rb := startRestBroker(t)
	topic, group := uniqueTopic(t), uniqueTopic(t)+"-g"
	createTopic(t, newAdmin(t, rb.Broker), topic, 2, nil)
	produce := func(partition int, value string) {
		rb.mustJSON(t, http.MethodPost, "/topics/"+topic+"/partitions/"+strconv.Itoa(partition), v2BinaryCT,
			map[string]any{"records": []map[string]any{{"value": base64.StdEncoding.EncodeToString([]byte(value))}}}, http.StatusOK, nil)
	}
	for i := 0; i < 4; i++ {
		produce(i%2, fmt.Sprint("v", i))
	}

	type meta struct {
		Self string `json:"self"`
	}
	var cluster struct {
		Kind      string `json:"kind"`
		Metadata  meta   `json:"metadata"`
		ClusterID string `json:"cluster_id"`
		Brokers   struct {
			Related string `json:"related"`
		} `json:"brokers"`
	}
	rb.mustJSON(t, http.MethodGet, rb.v3(""), "", nil, http.StatusOK, &cluster)
	if cluster.Kind != "KafkaCluster" || cluster.ClusterID != rb.cluster || cluster.Metadata.Self != rb.url+rb.v3("") || cluster.Brokers.Related != rb.url+rb.v3("/brokers") {
		t.Fatalf("cluster: %+v", cluster)
	}
	var v2brokers struct {
		Brokers []int32 `json:"brokers"`
	}
	rb.mustJSON(t, http.MethodGet, "/brokers", "", nil, http.StatusOK, &v2brokers)
	if len(v2brokers.Brokers) != 1 {
		t.Fatalf("v2 brokers: %+v", v2brokers)
	}
	bid := strconv.Itoa(int(v2brokers.Brokers[0]))
	var broker struct {
		Kind     string `json:"kind"`
		Metadata meta   `json:"metadata"`
		BrokerID int32  `json:"broker_id"`
	}
	rb.mustJSON(t, http.MethodGet, rb.v3("/brokers/"+bid), "", nil, http.StatusOK, &broker)
	if broker.Kind != "KafkaBroker" || strconv.Itoa(int(broker.BrokerID)) != bid || broker.Metadata.Self != rb.url+rb.v3("/brokers/"+bid) {
		t.Fatalf("broker: %+v", broker)
	}
	type configList struct {
		Kind string `json:"kind"`
		Data []struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"data"`
	}
	var bcs configList
	rb.mustJSON(t, http.MethodGet, rb.v3("/brokers/"+bid+"/configs"), "", nil, http.StatusOK, &bcs)
	if bcs.Kind != "KafkaBrokerConfigList" || len(bcs.Data) < 10 || bcs.Data[0].Kind != "KafkaBrokerConfig" {
		t.Fatalf("broker configs: %s with %d", bcs.Kind, len(bcs.Data))
	}
	var ccs configList
	rb.mustJSON(t, http.MethodGet, rb.v3("/broker-configs"), "", nil, http.StatusOK, &ccs)
	if ccs.Kind != "KafkaClusterConfigList" {
		t.Fatalf("cluster-wide broker configs: %+v", ccs)
	}

	var names []string
	rb.mustJSON(t, http.MethodGet, "/topics", "", nil, http.StatusOK, &names)
	if !slices.Contains(names, topic) {
		t.Fatalf("v2 topics %v lack %s", names, topic)
	}
	type v2Partition struct {
		Partition int32 `json:"partition"`
		Leader    int32 `json:"leader"`
		Replicas  []struct {
			Broker int32 `json:"broker"`
			Leader bool  `json:"leader"`
			InSync bool  `json:"in_sync"`
		} `json:"replicas"`
	}
	var v2topic struct {
		Name       string            `json:"name"`
		Configs    map[string]string `json:"configs"`
		Partitions []v2Partition     `json:"partitions"`
	}
	rb.mustJSON(t, http.MethodGet, "/topics/"+topic, "", nil, http.StatusOK, &v2topic)
	if v2topic.Name != topic || v2topic.Configs["cleanup.policy"] != "delete" || len(v2topic.Partitions) != 2 ||
		len(v2topic.Partitions[1].Replicas) != 1 || !v2topic.Partitions[1].Replicas[0].Leader || !v2topic.Partitions[1].Replicas[0].InSync {
		t.Fatalf("v2 topic: %+v", v2topic)
	}
	var parts []v2Partition
	rb.mustJSON(t, http.MethodGet, "/topics/"+topic+"/partitions", "", nil, http.StatusOK, &parts)
	var one v2Partition
	rb.mustJSON(t, http.MethodGet, "/topics/"+topic+"/partitions/1", "", nil, http.StatusOK, &one)
	if len(parts) != 2 || one.Partition != 1 || strconv.Itoa(int(one.Leader)) != bid {
		t.Fatalf("v2 partitions %+v, partition 1 %+v", parts, one)
	}

	// A v2 consumer instance reads everything, so it is the group's member
	// with both partitions.
	rb.mustJSON(t, http.MethodPost, "/consumers/"+group, v2CT, map[string]any{"name": "m", "auto.offset.reset": "earliest"}, http.StatusOK, nil)
	base := "/consumers/" + group + "/instances/m"
	rb.mustJSON(t, http.MethodPost, base+"/subscription", v2CT, map[string]any{"topics": []string{topic}}, http.StatusNoContent, nil)
	read := 0
	poll.Until(t, 60*time.Second, "the instance to read the 4 records", func() error {
		var recs v2Records
		rb.mustJSON(t, http.MethodGet, base+"/records?timeout=1000", "", nil, http.StatusOK, &recs, "Accept", v2BinaryCT)
		read += len(recs)
		if read < 4 {
			return fmt.Errorf("%d records", read)
		}
		return nil
	})
	type groupData struct {
		Kind            string `json:"kind"`
		ConsumerGroupID string `json:"consumer_group_id"`
		State           string `json:"state"`
	}
	var groups struct {
		Kind string      `json:"kind"`
		Data []groupData `json:"data"`
	}
	rb.mustJSON(t, http.MethodGet, rb.v3("/consumer-groups"), "", nil, http.StatusOK, &groups)
	i := slices.IndexFunc(groups.Data, func(g groupData) bool { return g.ConsumerGroupID == group })
	if groups.Kind != "KafkaConsumerGroupList" || i < 0 || groups.Data[i].Kind != "KafkaConsumerGroup" || groups.Data[i].State != "STABLE" {
		t.Fatalf("consumer groups: %+v", groups)
	}
	type consumer struct {
		Kind       string `json:"kind"`
		Metadata   meta   `json:"metadata"`
		ConsumerID string `json:"consumer_id"`
		ClientID   string `json:"client_id"`
	}
	var consumers struct {
		Kind string     `json:"kind"`
		Data []consumer `json:"data"`
	}
	rb.mustJSON(t, http.MethodGet, rb.v3("/consumer-groups/"+group+"/consumers"), "", nil, http.StatusOK, &consumers)
	if consumers.Kind != "KafkaConsumerList" || len(consumers.Data) != 1 || consumers.Data[0].Kind != "KafkaConsumer" ||
		consumers.Data[0].ClientID != "vltava-rest-consumer-m" || consumers.Data[0].ConsumerID == "" {
		t.Fatalf("consumers: %+v", consumers)
	}
	member := rb.v3("/consumer-groups/" + group + "/consumers/" + consumers.Data[0].ConsumerID)
	var c consumer
	rb.mustJSON(t, http.MethodGet, member, "", nil, http.StatusOK, &c)
	if c != consumers.Data[0] || c.Metadata.Self != rb.url+member {
		t.Fatalf("consumer %+v, listed %+v", c, consumers.Data[0])
	}
	var asg struct {
		Kind string `json:"kind"`
		Data []struct {
			Kind        string `json:"kind"`
			TopicName   string `json:"topic_name"`
			PartitionID int32  `json:"partition_id"`
		} `json:"data"`
	}
	rb.mustJSON(t, http.MethodGet, member+"/assignments", "", nil, http.StatusOK, &asg)
	if asg.Kind != "KafkaConsumerAssignmentList" || len(asg.Data) != 2 || asg.Data[0].Kind != "KafkaConsumerAssignment" ||
		asg.Data[0].TopicName != topic || asg.Data[0].PartitionID != 0 || asg.Data[1].PartitionID != 1 {
		t.Fatalf("assignments: %+v", asg)
	}
	rb.mustJSON(t, http.MethodGet, member+"/assignments/"+topic+"/partitions/1", "", nil, http.StatusOK, nil)
	rb.wantError(t, rb.do(t, http.MethodGet, rb.v3("/consumer-groups/"+group+"/consumers/nobody"), "", nil), http.StatusNotFound, 404)

	// Back to the beginning of partition 0, then to its end: what was
	// there is skipped, and the next record produced is the one returned.
	parts0 := map[string]any{"partitions": []map[string]any{{"topic": topic, "partition": 0}}}
	rb.mustJSON(t, http.MethodPost, base+"/positions/beginning", v2CT, parts0, http.StatusNoContent, nil)
	rb.mustJSON(t, http.MethodPost, base+"/positions/end", v2CT, parts0, http.StatusNoContent, nil)
	produce(0, "after the end")
	var got []string
	poll.Until(t, 30*time.Second, "the record produced after the seek to the end", func() error {
		var recs v2Records
		rb.mustJSON(t, http.MethodGet, base+"/records?timeout=1000", "", nil, http.StatusOK, &recs, "Accept", v2BinaryCT)
		for _, r := range recs {
			var b64 string
			_ = json.Unmarshal(r.Value, &b64)
			v, _ := base64.StdEncoding.DecodeString(b64)
			got = append(got, fmt.Sprintf("%d/%d:%s", r.Partition, r.Offset, v))
		}
		if len(got) == 0 {
			return fmt.Errorf("no records yet")
		}
		return nil
	})
	if len(got) != 1 || got[0] != "0/2:after the end" {
		t.Fatalf("after the seek to the end: %v, want only 0/2:after the end", got)
	}
	rb.mustJSON(t, http.MethodDelete, base, "", nil, http.StatusNoContent, nil)
}
