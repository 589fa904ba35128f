package console

import (
	"net/http"
	"sort"
)

// Overview is the cluster at a glance.
type Overview struct {
	ClusterID       string
	Controller      int32
	Brokers         []Broker
	Topics          int
	InternalTopics  int
	Partitions      int
	UnderReplicated int
	Offline         int
}

// Broker is one broker of the cluster's metadata.
type Broker struct {
	ID   int32
	Host string
	Port int32
	Rack string
}

// overview answers GET /: Metadata for the brokers, the controller and
// every topic's partitions (a partition is under-replicated when its ISR
// is smaller than its replica set, offline when it has no leader).
func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.ctx(r)
	defer cancel()
	md, err := c.adm.Metadata(ctx)
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "Cannot read the cluster's metadata", err, "Check that the bootstrap servers are reachable.")
		return
	}
	o := Overview{ClusterID: md.Cluster, Controller: md.Controller}
	for _, b := range md.Brokers {
		rack := ""
		if b.Rack != nil {
			rack = *b.Rack
		}
		o.Brokers = append(o.Brokers, Broker{ID: b.NodeID, Host: b.Host, Port: b.Port, Rack: rack})
	}
	sort.Slice(o.Brokers, func(i, j int) bool { return o.Brokers[i].ID < o.Brokers[j].ID })
	for _, t := range md.Topics {
		if t.IsInternal {
			o.InternalTopics++
		} else {
			o.Topics++
		}
		for _, p := range t.Partitions {
			o.Partitions++
			if p.Leader < 0 {
				o.Offline++
			}
			if len(p.ISR) < len(p.Replicas) {
				o.UnderReplicated++
			}
		}
	}
	c.render(w, http.StatusOK, "overview", "Overview", "overview", o)
}
