package restproxy

import (
	"net/http"
	"strconv"
)

// clusterData is Confluent's KafkaCluster.
type clusterData struct {
	Kind                   string       `json:"kind"`
	Metadata               resourceMeta `json:"metadata"`
	ClusterID              string       `json:"cluster_id"`
	Controller             *related     `json:"controller,omitempty"`
	ACLs                   related      `json:"acls"`
	Brokers                related      `json:"brokers"`
	BrokerConfigs          related      `json:"broker_configs"`
	ConsumerGroups         related      `json:"consumer_groups"`
	Topics                 related      `json:"topics"`
	PartitionReassignments related      `json:"partition_reassignments"`
}

func (p *Proxy) routesClusters() {
	p.v3("GET /v3/clusters", p.listClusters)
	p.v3("GET /v3/clusters/{cluster_id}", p.getCluster)
}

func clusterOf(r *http.Request, id string, controller int32) clusterData {
	base := baseURL(r) + "/v3/clusters/" + id
	d := clusterData{
		Kind:                   "KafkaCluster",
		Metadata:               resourceMeta{Self: base, ResourceName: crn(id)},
		ClusterID:              id,
		ACLs:                   related{base + "/acls"},
		Brokers:                related{base + "/brokers"},
		BrokerConfigs:          related{base + "/broker-configs"},
		ConsumerGroups:         related{base + "/consumer-groups"},
		Topics:                 related{base + "/topics"},
		PartitionReassignments: related{base + "/topics/-/partitions/-/reassignment"},
	}
	if controller >= 0 {
		d.Controller = &related{base + "/brokers/" + strconv.Itoa(int(controller))}
	}
	return d
}

// listClusters: the one cluster the proxy fronts.
func (p *Proxy) listClusters(w http.ResponseWriter, r *http.Request) error {
	c, err := p.clients.get(r)
	if err != nil {
		return err
	}
	_, id, ctrl, err := p.clusterInfo(r, c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, "application/json", newList("KafkaClusterList", selfURL(r), []clusterData{clusterOf(r, id, ctrl)}))
	return nil
}

func (p *Proxy) getCluster(w http.ResponseWriter, r *http.Request) error {
	c, err := p.clients.get(r)
	if err != nil {
		return err
	}
	_, id, ctrl, err := p.clusterInfo(r, c)
	if err != nil {
		return err
	}
	if r.PathValue("cluster_id") != id {
		return bareErr(http.StatusNotFound, "Cluster %s cannot be found.", r.PathValue("cluster_id"))
	}
	writeJSON(w, http.StatusOK, "application/json", clusterOf(r, id, ctrl))
	return nil
}
