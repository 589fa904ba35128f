package restproxy

import (
	"github.com/twmb/franz-go/pkg/kadm"
	"net/http"
	"sort"
	"strings"
)

// contentTypeV2 is the v2 API's response type.
const contentTypeV2 = "application/vnd.kafka.v2+json"

// v2Partition is v2's partition metadata.
type v2Partition struct {
	Partition int32       `json:"partition"`
	Leader    int32       `json:"leader"`
	Replicas  []v2Replica `json:"replicas"`
}

type v2Replica struct {
	Broker int32 `json:"broker"`
	Leader bool  `json:"leader"`
	InSync bool  `json:"in_sync"`
}

func (p *Proxy) routesV2Metadata() {
	p.v2("GET /topics", p.v2Topics)
	p.v2("GET /topics/{topic}", p.v2Topic)
	p.v2("GET /topics/{topic}/partitions", p.v2Partitions)
	p.v2("GET /topics/{topic}/partitions/{partition}", p.v2PartitionGet)
	p.v2("GET /brokers", p.v2Brokers)
}

func v2PartitionOf(pd kadm.PartitionDetail) v2Partition {
	isr := map[int32]bool{}
	for _, b := range pd.ISR {
		isr[b] = true
	}
	out := v2Partition{Partition: pd.Partition, Leader: pd.Leader, Replicas: []v2Replica{}}
	for _, b := range pd.Replicas {
		out.Replicas = append(out.Replicas, v2Replica{Broker: b, Leader: b == pd.Leader, InSync: isr[b]})
	}
	return out
}

// v2Topics lists the topic names (internal ones excluded, as Confluent's
// v2 lists them).
func (p *Proxy) v2Topics(w http.ResponseWriter, r *http.Request) error {
	c, err := p.clients.get(r)
	if err != nil {
		return err
	}
	cx, cancel := ctx(r)
	defer cancel()
	td, err := c.adm.ListTopics(cx)
	if err != nil {
		return err
	}
	names := []string{}
	for _, t := range td.Sorted() {
		if t.Err == nil && !strings.HasPrefix(t.Topic, "__") {
			names = append(names, t.Topic)
		}
	}
	writeJSON(w, http.StatusOK, contentTypeV2, names)
	return nil
}

func (p *Proxy) v2Topic(w http.ResponseWriter, r *http.Request) error {
	c, err := p.clients.get(r)
	if err != nil {
		return err
	}
	t, err := describeTopic(r, c, r.PathValue("topic"))
	if err != nil {
		return err
	}
	configs := map[string]string{}
	s := configScope{kind: "KafkaTopicConfig", resType: 2, resName: t.Topic}
	if cs, err := p.describe(r, c, "", s, ""); err == nil {
		for _, cd := range cs {
			if cd.Value != nil {
				configs[cd.Name] = *cd.Value
			}
		}
	} else {
		return err
	}
	parts := []v2Partition{}
	for _, pd := range sortedPartitions(t) {
		parts = append(parts, v2PartitionOf(pd))
	}
	writeJSON(w, http.StatusOK, contentTypeV2, map[string]any{"name": t.Topic, "configs": configs, "partitions": parts})
	return nil
}

func (p *Proxy) v2Partitions(w http.ResponseWriter, r *http.Request) error {
	c, err := p.clients.get(r)
	if err != nil {
		return err
	}
	t, err := describeTopic(r, c, r.PathValue("topic"))
	if err != nil {
		return err
	}
	parts := []v2Partition{}
	for _, pd := range sortedPartitions(t) {
		parts = append(parts, v2PartitionOf(pd))
	}
	writeJSON(w, http.StatusOK, contentTypeV2, parts)
	return nil
}

func (p *Proxy) v2PartitionGet(w http.ResponseWriter, r *http.Request) error {
	c, err := p.clients.get(r)
	if err != nil {
		return err
	}
	t, err := describeTopic(r, c, r.PathValue("topic"))
	if err != nil {
		return err
	}
	id, err := intPath(r, "partition", errPartitionNotFound())
	if err != nil {
		return err
	}
	pd, ok := t.Partitions[id]
	if !ok {
		return errPartitionNotFound()
	}
	writeJSON(w, http.StatusOK, contentTypeV2, v2PartitionOf(pd))
	return nil
}

func (p *Proxy) v2Brokers(w http.ResponseWriter, r *http.Request) error {
	c, err := p.clients.get(r)
	if err != nil {
		return err
	}
	brokers, _, _, err := p.clusterInfo(r, c)
	if err != nil {
		return err
	}
	ids := []int32{}
	for _, b := range brokers {
		ids = append(ids, b.NodeID)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	writeJSON(w, http.StatusOK, contentTypeV2, map[string]any{"brokers": ids})
	return nil
}
