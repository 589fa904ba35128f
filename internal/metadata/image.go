package metadata

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// Image is an immutable snapshot of the cluster metadata after applying the
// metadata log up to Offset. Apply returns a new Image and leaves the receiver
// untouched, sharing every unchanged part (see cowMap), so holding an old
// image is cheap and reading one never needs a lock.
//
// Everything reachable from an Image (TopicImage, PartitionImage, slices,
// maps) is shared with other images and must be treated as read-only. The
// accessors returning maps return copies.
type Image struct {
	offset int64

	topics   cowMap[Uuid, *TopicImage]
	topicIDs cowMap[string, Uuid]
	// configs holds dynamic config overrides per resource; the inner maps are
	// replaced, never modified, when a ConfigRecord is applied.
	configs cowMap[configResource, map[string]string]

	// brokers and features are small; they are copied whole on change.
	brokers  map[int32]*BrokerImage
	features map[string]int16

	nextProducerID    int64
	lastProducerBlock *ProducerIDsRecord
	clusterID         string
	// clientQuotas is replaced whole on change (client_quotas.go).
	clientQuotas *ClientQuotas
	// acls is the ACL bindings (acl_records.go); nil means none.
	acls *ACLSet
	// scram holds the SCRAM credentials (scram.go); replaced, never
	// modified, on change.
	scram map[ScramKey]ScramCredential
	// tokens holds the delegation tokens by id (delegation_tokens.go);
	// replaced, never modified, on change.
	tokens map[string]DelegationToken

	// sortedTopics caches Topics(); computed on first use.
	sortedTopics atomic.Pointer[[]*TopicImage]
}

type configResource struct {
	Type int8
	Name string
}

// TopicImage is one topic. Partitions is indexed by partition id (partitions
// are always numbered 0..len-1).
type TopicImage struct {
	Name       string
	ID         Uuid
	IsInternal bool
	Partitions []*PartitionImage
}

// PartitionImage is the replica assignment and leadership of one partition.
type PartitionImage struct {
	Partition      int32
	Replicas       []int32
	ISR            []int32
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	// AddingReplicas and RemovingReplicas are non-empty while a
	// reassignment is in progress (KIP-455).
	AddingReplicas   []int32
	RemovingReplicas []int32
}

// Reassigning reports whether a reassignment of the partition is in
// progress.
func (p *PartitionImage) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// BrokerImage is the latest registration of a broker.
type BrokerImage struct {
	ID            int32
	IncarnationID Uuid
	Epoch         int64
	Endpoints     []Endpoint
	Rack          string
	Fenced        bool
	// InControlledShutdown is set while the broker moves its leaderships
	// away before a clean stop.
	InControlledShutdown bool
}

// Active reports whether the broker may lead partitions and receive new
// replicas: registered, unfenced and not shutting down.
func (b BrokerImage) Active() bool { return !b.Fenced && !b.InControlledShutdown }

// EmptyImage returns the image of an empty metadata log (Offset -1).
func EmptyImage() *Image { return &Image{offset: -1} }

// Offset returns the offset of the last applied record, -1 for an empty log.
func (img *Image) Offset() int64 { return img.offset }

// Topic returns the topic with the given name.
func (img *Image) Topic(name string) (*TopicImage, bool) {
	id, ok := img.topicIDs.get(name)
	if !ok {
		return nil, false
	}
	return img.topics.get(id)
}

// TopicByID returns the topic with the given id.
func (img *Image) TopicByID(id Uuid) (*TopicImage, bool) { return img.topics.get(id) }

// NumTopics returns the number of topics.
func (img *Image) NumTopics() int { return img.topics.len() }

// Topics returns all topics sorted by name. The slice is shared: do not modify.
func (img *Image) Topics() []*TopicImage {
	if p := img.sortedTopics.Load(); p != nil {
		return *p
	}
	out := make([]*TopicImage, 0, img.topics.len())
	img.topics.each(func(_ Uuid, t *TopicImage) { out = append(out, t) })
	slices.SortFunc(out, func(a, b *TopicImage) int { return strings.Compare(a.Name, b.Name) })
	img.sortedTopics.Store(&out)
	return out
}

// Partition returns one partition of a topic.
func (img *Image) Partition(topic string, partition int32) (*PartitionImage, bool) {
	t, ok := img.Topic(topic)
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return nil, false
	}
	return t.Partitions[partition], true
}

// TopicConfig returns a copy of the dynamic config overrides of a topic
// (empty, never nil, when there are none).
func (img *Image) TopicConfig(name string) map[string]string {
	return img.configCopy(configResource{ConfigResourceTopic, name})
}

// BrokerConfig returns a copy of the dynamic config overrides of a broker;
// id is the broker id in decimal, or "" for the cluster-wide default.
func (img *Image) BrokerConfig(id string) map[string]string {
	return img.configCopy(configResource{ConfigResourceBroker, id})
}

// GroupConfig returns a copy of the dynamic configs of a consumer group
// (empty, never nil, when there are none).
func (img *Image) GroupConfig(groupID string) map[string]string {
	return img.configCopy(configResource{ConfigResourceGroup, groupID})
}

// GroupConfigs returns a copy of every group's dynamic configs, by group id.
func (img *Image) GroupConfigs() map[string]map[string]string {
	out := map[string]map[string]string{}
	img.configs.each(func(r configResource, m map[string]string) {
		if r.Type == ConfigResourceGroup {
			out[r.Name] = maps.Clone(m)
		}
	})
	return out
}

func (img *Image) configCopy(r configResource) map[string]string {
	m, _ := img.configs.get(r)
	out := make(map[string]string, len(m))
	maps.Copy(out, m)
	return out
}

// Brokers returns all registered brokers sorted by id.
func (img *Image) Brokers() []BrokerImage {
	out := make([]BrokerImage, 0, len(img.brokers))
	for _, b := range img.brokers {
		out = append(out, *b)
	}
	slices.SortFunc(out, func(a, b BrokerImage) int { return int(a.ID) - int(b.ID) })
	return out
}

// Broker returns the registration of one broker.
func (img *Image) Broker(id int32) (BrokerImage, bool) {
	b, ok := img.brokers[id]
	if !ok {
		return BrokerImage{}, false
	}
	return *b, true
}

// UnfencedBrokerIDs returns the ids of registered, unfenced brokers, sorted.
func (img *Image) UnfencedBrokerIDs() []int32 {
	var out []int32
	for id, b := range img.brokers {
		if !b.Fenced {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// ActiveBrokerIDs returns the ids of brokers that may lead and receive new
// replicas (unfenced, not in controlled shutdown), sorted.
func (img *Image) ActiveBrokerIDs() []int32 {
	var out []int32
	for id, b := range img.brokers {
		if b.Active() {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// BrokerActive reports whether broker id is registered and active.
func (img *Image) BrokerActive(id int32) bool {
	b, ok := img.brokers[id]
	return ok && b.Active()
}

// Features returns a copy of the finalized feature levels.
func (img *Image) Features() map[string]int16 { return maps.Clone(img.features) }

// NextProducerID returns the first producer id not yet handed out.
func (img *Image) NextProducerID() int64 { return img.nextProducerID }

// ClusterID is the cluster's id once the first active controller has
// committed it; "" before.
func (img *Image) ClusterID() string { return img.clusterID }

// Records returns records that rebuild this image when applied, in order, to
// an empty image: the content of a snapshot. The order respects Apply's
// rules (a topic before its configs and partitions).
func (img *Image) Records() []Record {
	var recs []Record
	if img.clusterID != "" {
		recs = append(recs, &ClusterIDRecord{ClusterID: img.clusterID})
	}
	featureNames := slices.Sorted(maps.Keys(img.features))
	for _, name := range featureNames {
		recs = append(recs, &FeatureLevelRecord{Name: name, FeatureLevel: img.features[name]})
	}
	for _, b := range img.Brokers() {
		recs = append(recs, &RegisterBrokerRecord{
			BrokerID: b.ID, IncarnationID: b.IncarnationID, BrokerEpoch: b.Epoch,
			Endpoints: slices.Clone(b.Endpoints), Rack: b.Rack, Fenced: b.Fenced,
		})
		if b.InControlledShutdown {
			recs = append(recs, &BrokerRegistrationChangeRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch, InControlledShutdown: BoolPtr(true)})
		}
	}
	for _, t := range img.Topics() {
		recs = append(recs, &TopicRecord{Name: t.Name, TopicID: t.ID})
		recs = AppendConfigRecords(recs, ConfigResourceTopic, t.Name, img.TopicConfig(t.Name))
		for _, p := range t.Partitions {
			recs = append(recs, &PartitionRecord{
				TopicID: t.ID, Partition: p.Partition,
				Replicas: cloneInt32s(p.Replicas), ISR: cloneInt32s(p.ISR),
				Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
				AddingReplicas: cloneInt32s(p.AddingReplicas), RemovingReplicas: cloneInt32s(p.RemovingReplicas),
			})
		}
	}
	var brokerResources []string
	img.configs.each(func(r configResource, _ map[string]string) {
		if r.Type == ConfigResourceBroker {
			brokerResources = append(brokerResources, r.Name)
		}
	})
	slices.SortFunc(brokerResources, compareBrokerResource)
	for _, name := range brokerResources {
		recs = AppendConfigRecords(recs, ConfigResourceBroker, name, img.BrokerConfig(name))
	}
	groupConfigs := img.GroupConfigs()
	for _, id := range slices.Sorted(maps.Keys(groupConfigs)) {
		recs = AppendConfigRecords(recs, ConfigResourceGroup, id, groupConfigs[id])
	}
	if img.lastProducerBlock != nil {
		r := *img.lastProducerBlock
		recs = append(recs, &r)
	}
	recs = appendClientQuotaRecords(recs, img.clientQuotas)
	recs = appendACLRecords(recs, img.acls)
	recs = img.appendScramRecords(recs)
	recs = img.appendDelegationTokenRecords(recs)
	return recs
}

func AppendConfigRecords(recs []Record, typ int8, name string, cfg map[string]string) []Record {
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		recs = append(recs, &ConfigRecord{ResourceType: typ, ResourceName: name, Name: k, Value: StringPtr(cfg[k])})
	}
	return recs
}

// compareBrokerResource orders "" (cluster default) first, then broker ids
// numerically.
func compareBrokerResource(a, b string) int {
	ai, aerr := strconv.Atoi(a)
	bi, berr := strconv.Atoi(b)
	if aerr == nil && berr == nil {
		return ai - bi
	}
	return strings.Compare(a, b)
}
