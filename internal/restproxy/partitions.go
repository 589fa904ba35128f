package restproxy

import (
	"net/http"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
)

// partitionData is Confluent's KafkaPartition.
type partitionData struct {
	Kind         string       `json:"kind"`
	Metadata     resourceMeta `json:"metadata"`
	ClusterID    string       `json:"cluster_id"`
	TopicName    string       `json:"topic_name"`
	PartitionID  int32        `json:"partition_id"`
	Leader       *related     `json:"leader"`
	Replicas     related      `json:"replicas"`
	Reassignment related      `json:"reassignment"`
}

// replicaData is Confluent's KafkaReplica.
type replicaData struct {
	Kind        string       `json:"kind"`
	Metadata    resourceMeta `json:"metadata"`
	ClusterID   string       `json:"cluster_id"`
	TopicName   string       `json:"topic_name"`
	PartitionID int32        `json:"partition_id"`
	BrokerID    int32        `json:"broker_id"`
	IsLeader    bool         `json:"is_leader"`
	IsInSync    bool         `json:"is_in_sync"`
	Broker      related      `json:"broker"`
}

func (p *Proxy) routesPartitions() {
	pre := "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions"
	p.v3("GET "+pre, p.listPartitions)
	p.v3("GET "+pre+"/{partition_id}", p.getPartition)
	p.v3("GET "+pre+"/{partition_id}/replicas", p.listReplicas)
	p.v3("GET "+pre+"/{partition_id}/replicas/{broker_id}", p.getReplica)
}

func partitionURL(r *http.Request, cluster, topic string, part int32) string {
	return baseURL(r) + "/v3/clusters/" + cluster + "/topics/" + topic + "/partitions/" + strconv.Itoa(int(part))
}

func partitionOf(r *http.Request, cluster, topic string, pd kadm.PartitionDetail) partitionData {
	base := partitionURL(r, cluster, topic, pd.Partition)
	d := partitionData{
		Kind: "KafkaPartition", Metadata: resourceMeta{Self: base, ResourceName: crn(cluster, "topic", topic, "partition", strconv.Itoa(int(pd.Partition)))},
		ClusterID: cluster, TopicName: topic, PartitionID: pd.Partition,
		Replicas: related{base + "/replicas"}, Reassignment: related{base + "/reassignment"},
	}
	if pd.Leader >= 0 {
		d.Leader = &related{base + "/replicas/" + strconv.Itoa(int(pd.Leader))}
	}
	return d
}

func replicasOf(r *http.Request, cluster, topic string, pd kadm.PartitionDetail) []replicaData {
	base := partitionURL(r, cluster, topic, pd.Partition)
	isr := map[int32]bool{}
	for _, b := range pd.ISR {
		isr[b] = true
	}
	var out []replicaData
	for _, b := range pd.Replicas {
		s := strconv.Itoa(int(b))
		out = append(out, replicaData{
			Kind: "KafkaReplica", Metadata: resourceMeta{Self: base + "/replicas/" + s,
				ResourceName: crn(cluster, "topic", topic, "partition", strconv.Itoa(int(pd.Partition)), "replica", s)},
			ClusterID: cluster, TopicName: topic, PartitionID: pd.Partition, BrokerID: b,
			IsLeader: b == pd.Leader, IsInSync: isr[b],
			Broker: related{baseURL(r) + "/v3/clusters/" + cluster + "/brokers/" + s},
		})
	}
	return out
}

// partition resolves {topic_name} and {partition_id}.
func (p *Proxy) partition(r *http.Request) (string, kadm.PartitionDetail, error) {
	c, cluster, err := p.cluster(r)
	if err != nil {
		return "", kadm.PartitionDetail{}, err
	}
	t, err := describeTopic(r, c, r.PathValue("topic_name"))
	if err != nil {
		return "", kadm.PartitionDetail{}, err
	}
	id, err := intPath(r, "partition_id", errPartitionNotFound())
	if err != nil {
		return "", kadm.PartitionDetail{}, err
	}
	pd, ok := t.Partitions[id]
	if !ok {
		return "", kadm.PartitionDetail{}, errPartitionNotFound()
	}
	return cluster, pd, nil
}

func (p *Proxy) listPartitions(w http.ResponseWriter, r *http.Request) error {
	c, cluster, err := p.cluster(r)
	if err != nil {
		return err
	}
	t, err := describeTopic(r, c, r.PathValue("topic_name"))
	if err != nil {
		return err
	}
	var out []partitionData
	for _, pd := range sortedPartitions(t) {
		out = append(out, partitionOf(r, cluster, t.Topic, pd))
	}
	writeJSON(w, http.StatusOK, "application/json", newList("KafkaPartitionList", selfURL(r), out))
	return nil
}

func (p *Proxy) getPartition(w http.ResponseWriter, r *http.Request) error {
	cluster, pd, err := p.partition(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, "application/json", partitionOf(r, cluster, r.PathValue("topic_name"), pd))
	return nil
}

func (p *Proxy) listReplicas(w http.ResponseWriter, r *http.Request) error {
	cluster, pd, err := p.partition(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, "application/json", newList("KafkaReplicaList", selfURL(r), replicasOf(r, cluster, r.PathValue("topic_name"), pd)))
	return nil
}

func (p *Proxy) getReplica(w http.ResponseWriter, r *http.Request) error {
	cluster, pd, err := p.partition(r)
	if err != nil {
		return err
	}
	want, err := intPath(r, "broker_id", bareErr(http.StatusNotFound, "Replica %s cannot be found.", r.PathValue("broker_id")))
	if err != nil {
		return err
	}
	for _, rd := range replicasOf(r, cluster, r.PathValue("topic_name"), pd) {
		if rd.BrokerID == want {
			writeJSON(w, http.StatusOK, "application/json", rd)
			return nil
		}
	}
	return bareErr(http.StatusNotFound, "Replica %d cannot be found.", want)
}
