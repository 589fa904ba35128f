package metadata

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Apply applies a committed batch of records and returns the resulting image.
// offset is the offset of the batch's last record and must be greater than
// img.Offset(); the new image reports it as its Offset.
//
// Apply is deterministic: every node applying the same batches in the same
// order reaches the same image. It is atomic: if any record is impossible in
// the current state (a partition of an unknown topic, a duplicate topic id,
// ...) it returns an error wrapping kerr.InvalidRequest and no image; the
// receiver is never modified.
func (img *Image) Apply(offset int64, recs []Record) (*Image, error) {
	if offset <= img.offset {
		return nil, fmt.Errorf("%w: metadata batch offset %d is not after the image offset %d", kerr.InvalidRequest, offset, img.offset)
	}
	b := newImageBuilder(img)
	for i, r := range recs {
		if err := b.apply(r); err != nil {
			return nil, fmt.Errorf("%w: metadata record %d of batch at offset %d (%v): %v", kerr.InvalidRequest, i, offset, typeOf(r), err)
		}
	}
	return b.build(offset), nil
}

func typeOf(r Record) string {
	if r == nil {
		return "nil"
	}
	return r.Type().String()
}

// imageBuilder accumulates the changes of one batch.
type imageBuilder struct {
	base     *Image
	topics   *cowBuilder[Uuid, *TopicImage]
	topicIDs *cowBuilder[string, Uuid]
	configs  *cowBuilder[configResource, map[string]string]
	// ownedTopics holds the topics copied (or created) in this batch, so a
	// batch creating 1000 partitions of one topic copies it once.
	ownedTopics map[Uuid]bool
	// ownedConfigs likewise for config maps.
	ownedConfigs map[configResource]bool

	brokers           map[int32]*BrokerImage
	brokersCopied     bool
	features          map[string]int16
	featuresCopied    bool
	nextProducerID    int64
	lastProducerBlock *ProducerIDsRecord
	clusterID         string
	clientQuotas      *ClientQuotas
	acls              aclBuilder
	scram             map[ScramKey]ScramCredential
	scramCopied       bool
	tokens            map[string]DelegationToken
	tokensCopied      bool
}

func newImageBuilder(img *Image) *imageBuilder {
	return &imageBuilder{
		base:              img,
		topics:            newCowBuilder(img.topics),
		topicIDs:          newCowBuilder(img.topicIDs),
		configs:           newCowBuilder(img.configs),
		ownedTopics:       map[Uuid]bool{},
		ownedConfigs:      map[configResource]bool{},
		brokers:           img.brokers,
		features:          img.features,
		nextProducerID:    img.nextProducerID,
		lastProducerBlock: img.lastProducerBlock,
		clusterID:         img.clusterID,
		clientQuotas:      img.clientQuotas,
		acls:              aclBuilder{set: img.acls},
		scram:             img.scram,
		tokens:            img.tokens,
	}
}

func (b *imageBuilder) build(offset int64) *Image {
	return &Image{
		offset:            offset,
		topics:            b.topics.build(),
		topicIDs:          b.topicIDs.build(),
		configs:           b.configs.build(),
		brokers:           b.brokers,
		features:          b.features,
		nextProducerID:    b.nextProducerID,
		lastProducerBlock: b.lastProducerBlock,
		clusterID:         b.clusterID,
		clientQuotas:      b.clientQuotas,
		acls:              b.acls.set,
		scram:             b.scram,
		tokens:            b.tokens,
	}
}

func (b *imageBuilder) apply(r Record) error {
	switch r := r.(type) {
	case *TopicRecord:
		return b.applyTopic(r)
	case *PartitionRecord:
		return b.applyPartition(r)
	case *PartitionChangeRecord:
		return b.applyPartitionChange(r)
	case *RemoveTopicRecord:
		return b.applyRemoveTopic(r)
	case *ConfigRecord:
		return b.applyConfig(r)
	case *ProducerIDsRecord:
		return b.applyProducerIDs(r)
	case *RegisterBrokerRecord:
		return b.applyRegisterBroker(r)
	case *FeatureLevelRecord:
		return b.applyFeatureLevel(r)
	case *BrokerRegistrationChangeRecord:
		return b.applyBrokerRegistrationChange(r)
	case *ClientQuotaRecord:
		return b.applyClientQuota(r)
	case *AccessControlEntryRecord:
		return b.acls.add(r)
	case *RemoveAccessControlEntryRecord:
		return b.acls.remove(r)
	case *ClusterIDRecord:
		if _, err := ParseUuid(r.ClusterID); err != nil {
			return fmt.Errorf("invalid cluster id %q", r.ClusterID)
		}
		if b.clusterID != "" && b.clusterID != r.ClusterID {
			return fmt.Errorf("cluster id is already %s, cannot become %s", b.clusterID, r.ClusterID)
		}
		b.clusterID = r.ClusterID
		return nil
	case *UserScramCredentialRecord, *RemoveUserScramCredentialRecord:
		return b.applyScram(r)
	case *DelegationTokenRecord, *RemoveDelegationTokenRecord:
		return b.applyDelegationToken(r)
	case nil:
		return fmt.Errorf("nil record")
	}
	return fmt.Errorf("unsupported record type %T", r)
}

func (b *imageBuilder) applyTopic(r *TopicRecord) error {
	if err := ValidateTopicName(r.Name); err != nil {
		return err
	}
	if r.TopicID.IsReserved() {
		return fmt.Errorf("topic %q has reserved id %v", r.Name, r.TopicID)
	}
	if _, ok := b.topicIDs.get(r.Name); ok {
		return fmt.Errorf("topic %q already exists", r.Name)
	}
	if t, ok := b.topics.get(r.TopicID); ok {
		return fmt.Errorf("topic id %v is already used by %q", r.TopicID, t.Name)
	}
	b.topics.set(r.TopicID, &TopicImage{Name: r.Name, ID: r.TopicID, IsInternal: IsInternalTopic(r.Name)})
	b.topicIDs.set(r.Name, r.TopicID)
	b.ownedTopics[r.TopicID] = true
	return nil
}

// mutableTopic returns a copy of the topic private to this batch.
func (b *imageBuilder) mutableTopic(id Uuid) (*TopicImage, error) {
	t, ok := b.topics.get(id)
	if !ok {
		return nil, fmt.Errorf("unknown topic id %v", id)
	}
	if !b.ownedTopics[id] {
		c := *t
		c.Partitions = slices.Clone(t.Partitions)
		t = &c
		b.topics.set(id, t)
		b.ownedTopics[id] = true
	}
	return t, nil
}

func (b *imageBuilder) applyPartition(r *PartitionRecord) error {
	t, err := b.mutableTopic(r.TopicID)
	if err != nil {
		return err
	}
	if int(r.Partition) != len(t.Partitions) {
		return fmt.Errorf("partition %d of %q: next partition must be %d", r.Partition, t.Name, len(t.Partitions))
	}
	p := &PartitionImage{
		Partition: r.Partition, Replicas: cloneInt32s(r.Replicas), ISR: cloneInt32s(r.ISR),
		Leader: r.Leader, LeaderEpoch: r.LeaderEpoch, PartitionEpoch: r.PartitionEpoch,
		AddingReplicas: cloneInt32s(r.AddingReplicas), RemovingReplicas: cloneInt32s(r.RemovingReplicas),
	}
	if err := checkPartition(p); err != nil {
		return fmt.Errorf("partition %d of %q: %v", r.Partition, t.Name, err)
	}
	t.Partitions = append(t.Partitions, p)
	return nil
}

func (b *imageBuilder) applyPartitionChange(r *PartitionChangeRecord) error {
	t, err := b.mutableTopic(r.TopicID)
	if err != nil {
		return err
	}
	if r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
		return fmt.Errorf("unknown partition %d of %q", r.Partition, t.Name)
	}
	p := *t.Partitions[r.Partition]
	if r.Replicas != nil {
		p.Replicas = cloneInt32s(r.Replicas)
		p.AddingReplicas = cloneInt32s(r.AddingReplicas)
		p.RemovingReplicas = cloneInt32s(r.RemovingReplicas)
	}
	if r.ISR != nil {
		p.ISR = cloneInt32s(r.ISR)
	}
	if r.Leader != nil && *r.Leader != p.Leader {
		p.Leader = *r.Leader
		p.LeaderEpoch++
	}
	p.PartitionEpoch++
	if err := checkPartition(&p); err != nil {
		return fmt.Errorf("partition %d of %q: %v", r.Partition, t.Name, err)
	}
	t.Partitions[r.Partition] = &p
	return nil
}

// checkPartition rejects assignments no controller would produce.
func checkPartition(p *PartitionImage) error {
	if len(p.Replicas) == 0 {
		return fmt.Errorf("no replicas")
	}
	seen := make(map[int32]bool, len(p.Replicas))
	for _, r := range p.Replicas {
		if r < 0 || seen[r] {
			return fmt.Errorf("invalid or duplicate replica %d in %v", r, p.Replicas)
		}
		seen[r] = true
	}
	for _, r := range p.ISR {
		if !seen[r] {
			return fmt.Errorf("ISR member %d is not a replica", r)
		}
	}
	if p.Leader != NoLeader && !seen[p.Leader] {
		return fmt.Errorf("leader %d is not a replica", p.Leader)
	}
	for _, r := range slices.Concat(p.AddingReplicas, p.RemovingReplicas) {
		if !seen[r] {
			return fmt.Errorf("reassigning replica %d is not a replica", r)
		}
	}
	return nil
}

func (b *imageBuilder) applyRemoveTopic(r *RemoveTopicRecord) error {
	t, ok := b.topics.get(r.TopicID)
	if !ok {
		return fmt.Errorf("unknown topic id %v", r.TopicID)
	}
	b.topics.delete(r.TopicID)
	b.topicIDs.delete(t.Name)
	// Kafka drops a deleted topic's config overrides with it, so a new topic
	// of the same name starts from the defaults.
	cr := configResource{ConfigResourceTopic, t.Name}
	b.configs.delete(cr)
	delete(b.ownedConfigs, cr)
	delete(b.ownedTopics, r.TopicID)
	return nil
}

func (b *imageBuilder) applyConfig(r *ConfigRecord) error {
	if r.Name == "" {
		return fmt.Errorf("empty config name")
	}
	switch r.ResourceType {
	case ConfigResourceTopic:
		if _, ok := b.topicIDs.get(r.ResourceName); !ok {
			return fmt.Errorf("config for unknown topic %q", r.ResourceName)
		}
	case ConfigResourceBroker:
		if r.ResourceName != "" {
			if id, err := strconv.ParseInt(r.ResourceName, 10, 32); err != nil || id < 0 {
				return fmt.Errorf("invalid broker resource name %q", r.ResourceName)
			}
		}
	case ConfigResourceGroup:
		if r.ResourceName == "" {
			return fmt.Errorf("config for an empty group id")
		}
	default:
		return fmt.Errorf("unsupported config resource type %d", r.ResourceType)
	}
	cr := configResource{r.ResourceType, r.ResourceName}
	cur, _ := b.configs.get(cr)
	if !b.ownedConfigs[cr] {
		cur = maps.Clone(cur)
		if cur == nil {
			cur = map[string]string{}
		}
		b.ownedConfigs[cr] = true
	}
	if r.Value == nil {
		delete(cur, r.Name)
	} else {
		cur[r.Name] = *r.Value
	}
	if len(cur) == 0 {
		b.configs.delete(cr)
		delete(b.ownedConfigs, cr)
		return nil
	}
	b.configs.set(cr, cur)
	return nil
}

func (b *imageBuilder) applyProducerIDs(r *ProducerIDsRecord) error {
	if r.NextProducerID <= b.nextProducerID {
		return fmt.Errorf("next producer id %d does not advance past %d", r.NextProducerID, b.nextProducerID)
	}
	b.nextProducerID = r.NextProducerID
	c := *r
	b.lastProducerBlock = &c
	return nil
}

func (b *imageBuilder) applyRegisterBroker(r *RegisterBrokerRecord) error {
	if r.BrokerID < 0 {
		return fmt.Errorf("invalid broker id %d", r.BrokerID)
	}
	if old, ok := b.brokers[r.BrokerID]; ok && r.BrokerEpoch <= old.Epoch {
		return fmt.Errorf("broker %d epoch %d does not advance past %d", r.BrokerID, r.BrokerEpoch, old.Epoch)
	}
	if !b.brokersCopied {
		b.brokers = maps.Clone(b.brokers)
		if b.brokers == nil {
			b.brokers = map[int32]*BrokerImage{}
		}
		b.brokersCopied = true
	}
	b.brokers[r.BrokerID] = &BrokerImage{
		ID: r.BrokerID, IncarnationID: r.IncarnationID, Epoch: r.BrokerEpoch,
		Endpoints: slices.Clone(r.Endpoints), Rack: r.Rack, Fenced: r.Fenced,
	}
	return nil
}

func (b *imageBuilder) applyBrokerRegistrationChange(r *BrokerRegistrationChangeRecord) error {
	old, ok := b.brokers[r.BrokerID]
	if !ok {
		return fmt.Errorf("unknown broker %d", r.BrokerID)
	}
	if old.Epoch != r.BrokerEpoch {
		return fmt.Errorf("broker %d epoch %d is not the registered epoch %d", r.BrokerID, r.BrokerEpoch, old.Epoch)
	}
	if !b.brokersCopied {
		b.brokers = maps.Clone(b.brokers)
		b.brokersCopied = true
	}
	nb := *old
	if r.Fenced != nil {
		nb.Fenced = *r.Fenced
	}
	if r.InControlledShutdown != nil {
		nb.InControlledShutdown = *r.InControlledShutdown
	}
	b.brokers[r.BrokerID] = &nb
	return nil
}

func (b *imageBuilder) applyFeatureLevel(r *FeatureLevelRecord) error {
	if r.Name == "" {
		return fmt.Errorf("empty feature name")
	}
	if !b.featuresCopied {
		b.features = maps.Clone(b.features)
		if b.features == nil {
			b.features = map[string]int16{}
		}
		b.featuresCopied = true
	}
	if r.FeatureLevel == 0 {
		delete(b.features, r.Name)
	} else {
		b.features[r.Name] = r.FeatureLevel
	}
	return nil
}
