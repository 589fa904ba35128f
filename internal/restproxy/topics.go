package restproxy

import (
	"errors"
	"net/http"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// topicData is Confluent's KafkaTopic.
type topicData struct {
	Kind                   string       `json:"kind"`
	Metadata               resourceMeta `json:"metadata"`
	ClusterID              string       `json:"cluster_id"`
	TopicName              string       `json:"topic_name"`
	IsInternal             bool         `json:"is_internal"`
	ReplicationFactor      int          `json:"replication_factor"`
	PartitionsCount        int          `json:"partitions_count"`
	Partitions             related      `json:"partitions"`
	Configs                related      `json:"configs"`
	PartitionReassignments related      `json:"partition_reassignments"`
	AuthorizedOperations   []string     `json:"authorized_operations"`
}

// createTopicRequest is Confluent's CreateTopicRequest.
type createTopicRequest struct {
	TopicName         string `json:"topic_name"`
	PartitionsCount   *int32 `json:"partitions_count"`
	ReplicationFactor *int16 `json:"replication_factor"`
	Configs           []struct {
		Name  string  `json:"name"`
		Value *string `json:"value"`
	} `json:"configs"`
	ValidateOnly bool `json:"validate_only"`
}

func (p *Proxy) routesTopics() {
	p.v3("GET /v3/clusters/{cluster_id}/topics", p.listTopics)
	p.v3("POST /v3/clusters/{cluster_id}/topics", p.createTopic)
	p.v3("GET /v3/clusters/{cluster_id}/topics/{topic_name}", p.getTopic)
	p.v3("DELETE /v3/clusters/{cluster_id}/topics/{topic_name}", p.deleteTopic)
}

func topicOf(r *http.Request, cluster string, t kadm.TopicDetail) topicData {
	base := baseURL(r) + "/v3/clusters/" + cluster + "/topics/" + t.Topic
	rf := 0
	if p, ok := t.Partitions[0]; ok {
		rf = len(p.Replicas)
	}
	return topicData{
		Kind: "KafkaTopic", Metadata: resourceMeta{Self: base, ResourceName: crn(cluster, "topic", t.Topic)},
		ClusterID: cluster, TopicName: t.Topic, IsInternal: t.IsInternal,
		ReplicationFactor: rf, PartitionsCount: len(t.Partitions),
		Partitions: related{base + "/partitions"}, Configs: related{base + "/configs"},
		PartitionReassignments: related{base + "/partitions/-/reassignment"},
		AuthorizedOperations:   []string{},
	}
}

// describeTopic is one topic's metadata; 40401 if it does not exist (or
// the caller may not describe it, as Kafka hides such topics).
func describeTopic(r *http.Request, c *kafkaClient, topic string) (kadm.TopicDetail, error) {
	cx, cancel := ctx(r)
	defer cancel()
	td, err := c.adm.ListTopicsWithInternal(cx, topic)
	if err != nil {
		return kadm.TopicDetail{}, err
	}
	d, ok := td[topic]
	if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return kadm.TopicDetail{}, errTopicNotFound()
	}
	if d.Err != nil {
		return kadm.TopicDetail{}, d.Err
	}
	return d, nil
}

func (p *Proxy) listTopics(w http.ResponseWriter, r *http.Request) error {
	c, id, err := p.cluster(r)
	if err != nil {
		return err
	}
	cx, cancel := ctx(r)
	defer cancel()
	td, err := c.adm.ListTopicsWithInternal(cx)
	if err != nil {
		return err
	}
	var out []topicData
	for _, t := range td.Sorted() {
		if t.Err == nil {
			out = append(out, topicOf(r, id, t))
		}
	}
	writeJSON(w, http.StatusOK, "application/json", newList("KafkaTopicList", selfURL(r), out))
	return nil
}

func (p *Proxy) getTopic(w http.ResponseWriter, r *http.Request) error {
	c, id, err := p.cluster(r)
	if err != nil {
		return err
	}
	t, err := describeTopic(r, c, r.PathValue("topic_name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, "application/json", topicOf(r, id, t))
	return nil
}

// createTopic: 201 with the topic; partitions_count and
// replication_factor default to the broker's (-1), as Confluent's.
func (p *Proxy) createTopic(w http.ResponseWriter, r *http.Request) error {
	if err := requireJSON(r); err != nil {
		return err
	}
	c, id, err := p.cluster(r)
	if err != nil {
		return err
	}
	var req createTopicRequest
	if err := readBody(r, p.cfg.MaxRequestBytes, &req); err != nil {
		return err
	}
	if req.TopicName == "" {
		return errPayload("topic_name is required.")
	}
	parts, rf := int32(-1), int16(-1)
	if req.PartitionsCount != nil {
		parts = *req.PartitionsCount
	}
	if req.ReplicationFactor != nil {
		rf = *req.ReplicationFactor
	}
	configs := map[string]*string{}
	for _, kv := range req.Configs {
		configs[kv.Name] = kv.Value
	}
	cx, cancel := ctx(r)
	defer cancel()
	var resp kadm.CreateTopicResponse
	if req.ValidateOnly {
		rs, err := c.adm.ValidateCreateTopics(cx, parts, rf, configs, req.TopicName)
		if err != nil {
			return err
		}
		resp = rs[req.TopicName]
	} else {
		resp, err = c.adm.CreateTopic(cx, parts, rf, configs, req.TopicName)
		if err != nil && resp.Err == nil {
			return err
		}
	}
	if resp.Err != nil {
		ae := kafkaErr(resp.Err)
		if resp.ErrMessage != "" {
			ae.msg = resp.ErrMessage
		}
		return ae
	}
	td := topicData{}
	if d, err := describeTopic(r, c, req.TopicName); err == nil {
		td = topicOf(r, id, d)
	} else {
		// Just created: the metadata may lag; answer from the request.
		td = topicOf(r, id, kadm.TopicDetail{Topic: req.TopicName})
		td.PartitionsCount, td.ReplicationFactor = int(resp.NumPartitions), int(resp.ReplicationFactor)
	}
	writeJSON(w, http.StatusCreated, "application/json", td)
	return nil
}

// deleteTopic: 204.
func (p *Proxy) deleteTopic(w http.ResponseWriter, r *http.Request) error {
	c, _, err := p.cluster(r)
	if err != nil {
		return err
	}
	topic := r.PathValue("topic_name")
	cx, cancel := ctx(r)
	defer cancel()
	rs, err := c.adm.DeleteTopics(cx, topic)
	if err != nil {
		return err
	}
	if res := rs[topic]; res.Err != nil {
		if errors.Is(res.Err, kerr.UnknownTopicOrPartition) {
			return errTopicNotFound()
		}
		return res.Err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// sortedPartitions are a topic's partitions in id order.
func sortedPartitions(t kadm.TopicDetail) []kadm.PartitionDetail {
	out := make([]kadm.PartitionDetail, 0, len(t.Partitions))
	for _, p := range t.Partitions {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out
}
