package restproxy

import (
	"errors"
	"net/http"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// groupData is Confluent's KafkaConsumerGroup.
type groupData struct {
	Kind              string       `json:"kind"`
	Metadata          resourceMeta `json:"metadata"`
	ClusterID         string       `json:"cluster_id"`
	ConsumerGroupID   string       `json:"consumer_group_id"`
	IsSimple          bool         `json:"is_simple"`
	PartitionAssignor string       `json:"partition_assignor"`
	State             string       `json:"state"`
	Type              string       `json:"type"`
	Coordinator       related      `json:"coordinator"`
	Consumers         related      `json:"consumers"`
	LagSummary        related      `json:"lag_summary"`
}

// consumerData is Confluent's KafkaConsumer.
type consumerData struct {
	Kind            string       `json:"kind"`
	Metadata        resourceMeta `json:"metadata"`
	ClusterID       string       `json:"cluster_id"`
	ConsumerGroupID string       `json:"consumer_group_id"`
	ConsumerID      string       `json:"consumer_id"`
	InstanceID      *string      `json:"instance_id"`
	ClientID        string       `json:"client_id"`
	Assignments     related      `json:"assignments"`
}

// assignmentData is Confluent's KafkaConsumerAssignment.
type assignmentData struct {
	Kind            string       `json:"kind"`
	Metadata        resourceMeta `json:"metadata"`
	ClusterID       string       `json:"cluster_id"`
	ConsumerGroupID string       `json:"consumer_group_id"`
	ConsumerID      string       `json:"consumer_id"`
	TopicName       string       `json:"topic_name"`
	PartitionID     int32        `json:"partition_id"`
	Partition       related      `json:"partition"`
	Lag             related      `json:"lag"`
}

// lagData is Confluent's KafkaConsumerLag.
type lagData struct {
	Kind            string       `json:"kind"`
	Metadata        resourceMeta `json:"metadata"`
	ClusterID       string       `json:"cluster_id"`
	ConsumerGroupID string       `json:"consumer_group_id"`
	TopicName       string       `json:"topic_name"`
	PartitionID     int32        `json:"partition_id"`
	CurrentOffset   int64        `json:"current_offset"`
	LogEndOffset    int64        `json:"log_end_offset"`
	Lag             int64        `json:"lag"`
	ConsumerID      string       `json:"consumer_id"`
	InstanceID      *string      `json:"instance_id"`
	ClientID        string       `json:"client_id"`
}

// lagSummaryData is Confluent's KafkaConsumerGroupLagSummary.
type lagSummaryData struct {
	Kind              string       `json:"kind"`
	Metadata          resourceMeta `json:"metadata"`
	ClusterID         string       `json:"cluster_id"`
	ConsumerGroupID   string       `json:"consumer_group_id"`
	MaxLagConsumerID  string       `json:"max_lag_consumer_id"`
	MaxLagInstanceID  *string      `json:"max_lag_instance_id"`
	MaxLagClientID    string       `json:"max_lag_client_id"`
	MaxLagTopicName   string       `json:"max_lag_topic_name"`
	MaxLagPartitionID int32        `json:"max_lag_partition_id"`
	MaxLag            int64        `json:"max_lag"`
	TotalLag          int64        `json:"total_lag"`
	MaxLagConsumer    related      `json:"max_lag_consumer"`
	MaxLagPartition   related      `json:"max_lag_partition"`
}

func (p *Proxy) routesGroups() {
	pre := "/v3/clusters/{cluster_id}/consumer-groups"
	p.v3("GET "+pre, p.listGroups)
	p.v3("GET "+pre+"/{group_id}", p.getGroup)
	p.v3("GET "+pre+"/{group_id}/consumers", p.listConsumers)
	p.v3("GET "+pre+"/{group_id}/consumers/{consumer_id}", p.getConsumer)
	p.v3("GET "+pre+"/{group_id}/consumers/{consumer_id}/assignments", p.listAssignments)
	p.v3("GET "+pre+"/{group_id}/consumers/{consumer_id}/assignments/{topic_name}/partitions/{partition_id}", p.getAssignment)
	p.v3("GET "+pre+"/{group_id}/lags", p.listLags)
	p.v3("GET "+pre+"/{group_id}/lags/{topic_name}/partitions/{partition_id}", p.getLag)
	p.v3("GET "+pre+"/{group_id}/lag-summary", p.getLagSummary)
}

func groupURL(r *http.Request, cluster, group string) string {
	return baseURL(r) + "/v3/clusters/" + cluster + "/consumer-groups/" + group
}

func groupOf(r *http.Request, cluster string, g kadm.DescribedGroup) groupData {
	base := groupURL(r, cluster, g.Group)
	return groupData{
		Kind: "KafkaConsumerGroup", Metadata: resourceMeta{Self: base, ResourceName: crn(cluster, "consumer-group", g.Group)},
		ClusterID: cluster, ConsumerGroupID: g.Group, IsSimple: g.ProtocolType == "", PartitionAssignor: g.Protocol,
		State: groupState(g.State), Type: "CLASSIC",
		Coordinator: related{baseURL(r) + "/v3/clusters/" + cluster + "/brokers/" + strconv.Itoa(int(g.Coordinator.NodeID))},
		Consumers:   related{base + "/consumers"}, LagSummary: related{base + "/lag-summary"},
	}
}

// groupState is Kafka's group state in Confluent's spelling
// (ConsumerGroupState: STABLE, EMPTY, PREPARING_REBALANCE, ...).
func groupState(s string) string {
	switch s {
	case "Stable":
		return "STABLE"
	case "Empty":
		return "EMPTY"
	case "PreparingRebalance":
		return "PREPARING_REBALANCE"
	case "CompletingRebalance":
		return "COMPLETING_REBALANCE"
	case "Dead":
		return "DEAD"
	}
	return "UNKNOWN"
}

// describeGroup is one group; 40405 if the cluster does not know it.
func describeGroup(r *http.Request, c *kafkaClient, group string) (kadm.DescribedGroup, error) {
	cx, cancel := ctx(r)
	defer cancel()
	gs, err := c.adm.DescribeGroups(cx, group)
	if err != nil {
		var se *kadm.ShardErrors
		if !errors.As(err, &se) {
			return kadm.DescribedGroup{}, err
		}
	}
	g, ok := gs[group]
	if !ok {
		return kadm.DescribedGroup{}, errf(codeGroupNotFound, "Consumer group id not found.")
	}
	if g.Err != nil {
		if errors.Is(g.Err, kerr.GroupIDNotFound) {
			return kadm.DescribedGroup{}, errf(codeGroupNotFound, "Consumer group id not found.")
		}
		return kadm.DescribedGroup{}, g.Err
	}
	if g.State == "Dead" {
		return kadm.DescribedGroup{}, errf(codeGroupNotFound, "Consumer group id not found.")
	}
	return g, nil
}

func (p *Proxy) listGroups(w http.ResponseWriter, r *http.Request) error {
	c, cluster, err := p.cluster(r)
	if err != nil {
		return err
	}
	cx, cancel := ctx(r)
	defer cancel()
	listed, err := c.adm.ListGroups(cx)
	if err != nil {
		return err
	}
	var names []string
	for _, g := range listed.Sorted() {
		names = append(names, g.Group)
	}
	var out []groupData
	if len(names) > 0 {
		gs, err := c.adm.DescribeGroups(cx, names...)
		if err != nil {
			var se *kadm.ShardErrors
			if !errors.As(err, &se) {
				return err
			}
		}
		for _, name := range names {
			if g, ok := gs[name]; ok && g.Err == nil {
				out = append(out, groupOf(r, cluster, g))
			}
		}
	}
	writeJSON(w, http.StatusOK, "application/json", newList("KafkaConsumerGroupList", selfURL(r), out))
	return nil
}

func (p *Proxy) getGroup(w http.ResponseWriter, r *http.Request) error {
	c, cluster, err := p.cluster(r)
	if err != nil {
		return err
	}
	g, err := describeGroup(r, c, r.PathValue("group_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, "application/json", groupOf(r, cluster, g))
	return nil
}

func consumerOf(r *http.Request, cluster, group string, m kadm.DescribedGroupMember) consumerData {
	base := groupURL(r, cluster, group) + "/consumers/" + m.MemberID
	return consumerData{
		Kind: "KafkaConsumer", Metadata: resourceMeta{Self: base, ResourceName: crn(cluster, "consumer-group", group, "consumer", m.MemberID)},
		ClusterID: cluster, ConsumerGroupID: group, ConsumerID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID,
		Assignments: related{base + "/assignments"},
	}
}

func (p *Proxy) listConsumers(w http.ResponseWriter, r *http.Request) error {
	c, cluster, err := p.cluster(r)
	if err != nil {
		return err
	}
	g, err := describeGroup(r, c, r.PathValue("group_id"))
	if err != nil {
		return err
	}
	var out []consumerData
	for _, m := range g.Members {
		out = append(out, consumerOf(r, cluster, g.Group, m))
	}
	writeJSON(w, http.StatusOK, "application/json", newList("KafkaConsumerList", selfURL(r), out))
	return nil
}

// member is the group's {consumer_id}.
func member(g kadm.DescribedGroup, id string) (kadm.DescribedGroupMember, error) {
	for _, m := range g.Members {
		if m.MemberID == id {
			return m, nil
		}
	}
	return kadm.DescribedGroupMember{}, bareErr(http.StatusNotFound, "Consumer %s cannot be found.", id)
}

func (p *Proxy) getConsumer(w http.ResponseWriter, r *http.Request) error {
	c, cluster, err := p.cluster(r)
	if err != nil {
		return err
	}
	g, err := describeGroup(r, c, r.PathValue("group_id"))
	if err != nil {
		return err
	}
	m, err := member(g, r.PathValue("consumer_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, "application/json", consumerOf(r, cluster, g.Group, m))
	return nil
}

func assignmentsOf(r *http.Request, cluster, group string, m kadm.DescribedGroupMember) []assignmentData {
	var out []assignmentData
	ca, ok := m.Assigned.AsConsumer()
	if !ok {
		return nil
	}
	base := groupURL(r, cluster, group)
	for _, t := range ca.Topics {
		for _, part := range t.Partitions {
			ps := strconv.Itoa(int(part))
			out = append(out, assignmentData{
				Kind: "KafkaConsumerAssignment",
				Metadata: resourceMeta{Self: base + "/consumers/" + m.MemberID + "/assignments/" + t.Topic + "/partitions/" + ps,
					ResourceName: crn(cluster, "consumer-group", group, "consumer", m.MemberID, "assignment", t.Topic+"-"+ps)},
				ClusterID: cluster, ConsumerGroupID: group, ConsumerID: m.MemberID, TopicName: t.Topic, PartitionID: part,
				Partition: related{partitionURL(r, cluster, t.Topic, part)},
				Lag:       related{base + "/lags/" + t.Topic + "/partitions/" + ps},
			})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].TopicName != out[j].TopicName {
			return out[i].TopicName < out[j].TopicName
		}
		return out[i].PartitionID < out[j].PartitionID
	})
	return out
}

func (p *Proxy) listAssignments(w http.ResponseWriter, r *http.Request) error {
	c, cluster, err := p.cluster(r)
	if err != nil {
		return err
	}
	g, err := describeGroup(r, c, r.PathValue("group_id"))
	if err != nil {
		return err
	}
	m, err := member(g, r.PathValue("consumer_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, "application/json", newList("KafkaConsumerAssignmentList", selfURL(r), assignmentsOf(r, cluster, g.Group, m)))
	return nil
}

func (p *Proxy) getAssignment(w http.ResponseWriter, r *http.Request) error {
	c, cluster, err := p.cluster(r)
	if err != nil {
		return err
	}
	g, err := describeGroup(r, c, r.PathValue("group_id"))
	if err != nil {
		return err
	}
	m, err := member(g, r.PathValue("consumer_id"))
	if err != nil {
		return err
	}
	part, err := intPath(r, "partition_id", errPartitionNotFound())
	if err != nil {
		return err
	}
	for _, a := range assignmentsOf(r, cluster, g.Group, m) {
		if a.TopicName == r.PathValue("topic_name") && a.PartitionID == part {
			writeJSON(w, http.StatusOK, "application/json", a)
			return nil
		}
	}
	return bareErr(http.StatusNotFound, "Consumer assignment cannot be found.")
}

// lags are the group's lags on the partitions it has committed offsets
// for (Confluent's ConsumerLagManager: committed offset against the log
// end offset), sorted by topic and partition.
func (p *Proxy) lags(r *http.Request, c *kafkaClient, cluster string) ([]lagData, error) {
	group := r.PathValue("group_id")
	if _, err := describeGroup(r, c, group); err != nil {
		return nil, err
	}
	cx, cancel := ctx(r)
	defer cancel()
	ls, err := c.adm.Lag(cx, group)
	if err != nil {
		return nil, err
	}
	gl, ok := ls[group]
	if !ok {
		return nil, errf(codeGroupNotFound, "Consumer group id not found.")
	}
	if err := gl.Error(); err != nil {
		return nil, err
	}
	var out []lagData
	for _, l := range gl.Lag.Sorted() {
		if l.Commit.At < 0 {
			continue
		}
		if l.Err != nil {
			return nil, l.Err
		}
		ps := strconv.Itoa(int(l.Partition))
		d := lagData{
			Kind: "KafkaConsumerLag",
			Metadata: resourceMeta{Self: groupURL(r, cluster, group) + "/lags/" + l.Topic + "/partitions/" + ps,
				ResourceName: crn(cluster, "consumer-group", group, "lag", l.Topic+"-"+ps)},
			ClusterID: cluster, ConsumerGroupID: group, TopicName: l.Topic, PartitionID: l.Partition,
			CurrentOffset: l.Commit.At, LogEndOffset: l.End.Offset, Lag: l.Lag,
		}
		if l.Member != nil {
			d.ConsumerID, d.InstanceID, d.ClientID = l.Member.MemberID, l.Member.InstanceID, l.Member.ClientID
		}
		out = append(out, d)
	}
	return out, nil
}

func (p *Proxy) listLags(w http.ResponseWriter, r *http.Request) error {
	c, cluster, err := p.cluster(r)
	if err != nil {
		return err
	}
	out, err := p.lags(r, c, cluster)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, "application/json", newList("KafkaConsumerLagList", selfURL(r), out))
	return nil
}

func (p *Proxy) getLag(w http.ResponseWriter, r *http.Request) error {
	c, cluster, err := p.cluster(r)
	if err != nil {
		return err
	}
	part, err := intPath(r, "partition_id", errPartitionNotFound())
	if err != nil {
		return err
	}
	out, err := p.lags(r, c, cluster)
	if err != nil {
		return err
	}
	for _, l := range out {
		if l.TopicName == r.PathValue("topic_name") && l.PartitionID == part {
			writeJSON(w, http.StatusOK, "application/json", l)
			return nil
		}
	}
	return bareErr(http.StatusNotFound, "Consumer lag cannot be found.")
}

func (p *Proxy) getLagSummary(w http.ResponseWriter, r *http.Request) error {
	c, cluster, err := p.cluster(r)
	if err != nil {
		return err
	}
	out, err := p.lags(r, c, cluster)
	if err != nil {
		return err
	}
	group := r.PathValue("group_id")
	base := groupURL(r, cluster, group)
	s := lagSummaryData{Kind: "KafkaConsumerGroupLagSummary",
		Metadata:  resourceMeta{Self: base + "/lag-summary", ResourceName: crn(cluster, "consumer-group", group, "lag-summary", "")},
		ClusterID: cluster, ConsumerGroupID: group, MaxLagPartitionID: -1, MaxLag: -1}
	for _, l := range out {
		s.TotalLag += l.Lag
		if l.Lag > s.MaxLag {
			s.MaxLag, s.MaxLagTopicName, s.MaxLagPartitionID = l.Lag, l.TopicName, l.PartitionID
			s.MaxLagConsumerID, s.MaxLagInstanceID, s.MaxLagClientID = l.ConsumerID, l.InstanceID, l.ClientID
		}
	}
	if s.MaxLag < 0 {
		s.MaxLag, s.MaxLagPartitionID = 0, 0
	}
	s.MaxLagConsumer = related{base + "/consumers/" + s.MaxLagConsumerID}
	s.MaxLagPartition = related{partitionURL(r, cluster, s.MaxLagTopicName, s.MaxLagPartitionID)}
	writeJSON(w, http.StatusOK, "application/json", s)
	return nil
}
