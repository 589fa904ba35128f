package restproxy

import (
	"net/http"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
)

// brokerData is Confluent's KafkaBroker.
type brokerData struct {
	Kind              string       `json:"kind"`
	Metadata          resourceMeta `json:"metadata"`
	ClusterID         string       `json:"cluster_id"`
	BrokerID          int32        `json:"broker_id"`
	Host              string       `json:"host"`
	Port              int32        `json:"port"`
	Rack              *string      `json:"rack"`
	Configs           related      `json:"configs"`
	PartitionReplicas related      `json:"partition_replicas"`
}

func (p *Proxy) routesBrokers() {
	p.v3("GET /v3/clusters/{cluster_id}/brokers", p.listBrokers)
	p.v3("GET /v3/clusters/{cluster_id}/brokers/{broker_id}", p.getBroker)
}

func brokerOf(r *http.Request, cluster string, b kadm.BrokerDetail) brokerData {
	id := strconv.Itoa(int(b.NodeID))
	base := baseURL(r) + "/v3/clusters/" + cluster + "/brokers/" + id
	return brokerData{
		Kind: "KafkaBroker", Metadata: resourceMeta{Self: base, ResourceName: crn(cluster, "broker", id)},
		ClusterID: cluster, BrokerID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack,
		Configs: related{base + "/configs"}, PartitionReplicas: related{base + "/partition-replicas"},
	}
}

func (p *Proxy) listBrokers(w http.ResponseWriter, r *http.Request) error {
	c, id, err := p.cluster(r)
	if err != nil {
		return err
	}
	brokers, _, _, err := p.clusterInfo(r, c)
	if err != nil {
		return err
	}
	sort.Slice(brokers, func(i, j int) bool { return brokers[i].NodeID < brokers[j].NodeID })
	var out []brokerData
	for _, b := range brokers {
		out = append(out, brokerOf(r, id, b))
	}
	writeJSON(w, http.StatusOK, "application/json", newList("KafkaBrokerList", selfURL(r), out))
	return nil
}

func (p *Proxy) getBroker(w http.ResponseWriter, r *http.Request) error {
	c, id, err := p.cluster(r)
	if err != nil {
		return err
	}
	want, err := intPath(r, "broker_id", bareErr(http.StatusNotFound, "Broker %s cannot be found.", r.PathValue("broker_id")))
	if err != nil {
		return err
	}
	brokers, _, _, err := p.clusterInfo(r, c)
	if err != nil {
		return err
	}
	for _, b := range brokers {
		if b.NodeID == want {
			writeJSON(w, http.StatusOK, "application/json", brokerOf(r, id, b))
			return nil
		}
	}
	return bareErr(http.StatusNotFound, "Broker %d cannot be found.", want)
}
