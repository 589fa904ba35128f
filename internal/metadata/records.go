package metadata

import (
	"fmt"
	"slices"
)

// RecordType identifies a metadata record kind. The numbers follow the apiKey
// of the matching record in Kafka's metadata schema (RegisterBrokerRecord = 0,
// TopicRecord = 2, ...), so logs and debugging output line up with Kafka's
// names, but the encoding of the records themselves is ours (see codec.go).
type RecordType int8

const (
	RegisterBrokerRecordType  RecordType = 0
	TopicRecordType           RecordType = 2
	PartitionRecordType       RecordType = 3
	ConfigRecordType          RecordType = 4
	PartitionChangeRecordType RecordType = 5
	RemoveTopicRecordType     RecordType = 9
	FeatureLevelRecordType    RecordType = 12
	ProducerIDsRecordType     RecordType = 15
	// BrokerRegistrationChangeRecordType is Kafka's apiKey 17: fencing,
	// unfencing and controlled shutdown of a registered broker.
	BrokerRegistrationChangeRecordType RecordType = 17
	// ClusterIDRecordType is Vltava's own: the cluster id, committed once
	// by the first active controller so every node reports the same id
	// (Kafka formats every node's storage with one id instead).
	ClusterIDRecordType RecordType = 100
)

func (t RecordType) String() string {
	switch t {
	case RegisterBrokerRecordType:
		return "RegisterBrokerRecord"
	case TopicRecordType:
		return "TopicRecord"
	case PartitionRecordType:
		return "PartitionRecord"
	case ConfigRecordType:
		return "ConfigRecord"
	case PartitionChangeRecordType:
		return "PartitionChangeRecord"
	case RemoveTopicRecordType:
		return "RemoveTopicRecord"
	case FeatureLevelRecordType:
		return "FeatureLevelRecord"
	case ProducerIDsRecordType:
		return "ProducerIdsRecord"
	case BrokerRegistrationChangeRecordType:
		return "BrokerRegistrationChangeRecord"
	case ClusterIDRecordType:
		return "ClusterIDRecord"
	case ClientQuotaRecordType:
		return "ClientQuotaRecord"
	case AccessControlEntryRecordType:
		return "AccessControlEntryRecord"
	case RemoveAccessControlEntryRecordType:
		return "RemoveAccessControlEntryRecord"
	case UserScramCredentialRecordType:
		return "UserScramCredentialRecord"
	case RemoveUserScramCredentialRecordType:
		return "RemoveUserScramCredentialRecord"
	case DelegationTokenRecordType:
		return "DelegationTokenRecord"
	case RemoveDelegationTokenRecordType:
		return "RemoveDelegationTokenRecord"
	}
	return fmt.Sprintf("RecordType(%d)", int8(t))
}

// Record is one metadata record: a tagged union over the *Record structs of
// this package, discriminated by Type. Records are values describing a change;
// once handed to Log.Commit they must not be modified.
type Record interface {
	Type() RecordType
	// isRecord closes the union to this package's types.
	isRecord()
}

// Kafka ConfigResource types used by ConfigRecord.ResourceType.
const (
	ConfigResourceTopic  int8 = 2
	ConfigResourceBroker int8 = 4
	// ConfigResourceGroup is a consumer group's dynamic configs (KIP-848).
	ConfigResourceGroup int8 = 32
)

// NoLeader is the Leader value of a partition without a leader (Kafka's -1).
const NoLeader int32 = -1

// TopicRecord creates a topic. Its partitions follow as PartitionRecords.
type TopicRecord struct {
	Name    string `json:"name"`
	TopicID Uuid   `json:"topic_id"`
}

// PartitionRecord creates one partition of an existing topic. Partitions must
// be created in order 0, 1, 2, ... so a topic's partitions are always dense.
type PartitionRecord struct {
	TopicID        Uuid    `json:"topic_id"`
	Partition      int32   `json:"partition"`
	Replicas       []int32 `json:"replicas"`
	ISR            []int32 `json:"isr"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PartitionEpoch int32   `json:"partition_epoch"`
	// AddingReplicas and RemovingReplicas describe a reassignment in
	// progress (KIP-455): Replicas is then the union of the target and the
	// original replicas.
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
}

// PartitionChangeRecord changes the leader, ISR or replicas of an existing
// partition. A nil field means "unchanged" (Kafka uses sentinel values; a
// pointer cannot be confused with broker 0). As in Kafka, changing the leader
// bumps the leader epoch, and any change bumps the partition epoch. When
// Replicas is set, AddingReplicas and RemovingReplicas replace the
// partition's (nil meaning none): a replica change always states the whole
// reassignment state.
type PartitionChangeRecord struct {
	TopicID          Uuid    `json:"topic_id"`
	Partition        int32   `json:"partition"`
	Leader           *int32  `json:"leader,omitempty"`
	ISR              []int32 `json:"isr,omitempty"`
	Replicas         []int32 `json:"replicas,omitempty"`
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
}

// RemoveTopicRecord deletes a topic, its partitions and its config overrides.
type RemoveTopicRecord struct {
	TopicID Uuid `json:"topic_id"`
}

// ConfigRecord sets (Value != nil) or deletes (Value == nil) one dynamic
// config. ResourceType is ConfigResourceTopic, ConfigResourceBroker or
// ConfigResourceGroup; for brokers ResourceName is the broker id in decimal,
// or "" for the cluster-wide default, as in Kafka; for groups it is the group
// id, which need not name an existing group (Kafka allows configuring a
// group before it is created).
type ConfigRecord struct {
	ResourceType int8    `json:"resource_type"`
	ResourceName string  `json:"resource_name"`
	Name         string  `json:"name"`
	Value        *string `json:"value"`
}

// ProducerIDsRecord records that the producer id block ending just below
// NextProducerID was handed to BrokerID (KRaft's ProducerIdsRecord). The next
// block starts at NextProducerID.
type ProducerIDsRecord struct {
	BrokerID       int32 `json:"broker_id"`
	BrokerEpoch    int64 `json:"broker_epoch"`
	NextProducerID int64 `json:"next_producer_id"`
}

// Endpoint is one listener of a broker.
type Endpoint struct {
	Name             string `json:"name"`
	Host             string `json:"host"`
	Port             int32  `json:"port"`
	SecurityProtocol int16  `json:"security_protocol"`
}

// RegisterBrokerRecord registers (or re-registers) a broker. BrokerEpoch is
// assigned by the controller and grows with every registration.
type RegisterBrokerRecord struct {
	BrokerID      int32      `json:"broker_id"`
	IncarnationID Uuid       `json:"incarnation_id"`
	BrokerEpoch   int64      `json:"broker_epoch"`
	Endpoints     []Endpoint `json:"endpoints"`
	Rack          string     `json:"rack,omitempty"`
	Fenced        bool       `json:"fenced"`
}

// BrokerRegistrationChangeRecord changes the state of the registration with
// BrokerEpoch (Kafka's record of the same name): a nil field is unchanged.
// A fenced broker may hold no leadership and is not a placement target; a
// broker in controlled shutdown is moving its leaderships away before it
// stops (KIP-631).
type BrokerRegistrationChangeRecord struct {
	BrokerID             int32 `json:"broker_id"`
	BrokerEpoch          int64 `json:"broker_epoch"`
	Fenced               *bool `json:"fenced,omitempty"`
	InControlledShutdown *bool `json:"in_controlled_shutdown,omitempty"`
}

// FeatureLevelRecord sets a finalized feature level (e.g. metadata.version);
// level 0 removes the feature, as in Kafka.
type FeatureLevelRecord struct {
	Name         string `json:"name"`
	FeatureLevel int16  `json:"feature_level"`
}

func (*TopicRecord) Type() RecordType           { return TopicRecordType }
func (*PartitionRecord) Type() RecordType       { return PartitionRecordType }
func (*PartitionChangeRecord) Type() RecordType { return PartitionChangeRecordType }
func (*RemoveTopicRecord) Type() RecordType     { return RemoveTopicRecordType }
func (*ConfigRecord) Type() RecordType          { return ConfigRecordType }
func (*ProducerIDsRecord) Type() RecordType     { return ProducerIDsRecordType }
func (*RegisterBrokerRecord) Type() RecordType  { return RegisterBrokerRecordType }
func (*FeatureLevelRecord) Type() RecordType    { return FeatureLevelRecordType }
func (*BrokerRegistrationChangeRecord) Type() RecordType {
	return BrokerRegistrationChangeRecordType
}

func (*TopicRecord) isRecord()           {}
func (*PartitionRecord) isRecord()       {}
func (*PartitionChangeRecord) isRecord() {}
func (*RemoveTopicRecord) isRecord()     {}
func (*ConfigRecord) isRecord()          {}
func (*ProducerIDsRecord) isRecord()     {}
func (*RegisterBrokerRecord) isRecord()  {}
func (*FeatureLevelRecord) isRecord()    {}

func (*BrokerRegistrationChangeRecord) isRecord() {}

// newRecord returns a zero record of type t, for decoding.
func newRecord(t RecordType) (Record, bool) {
	switch t {
	case TopicRecordType:
		return &TopicRecord{}, true
	case PartitionRecordType:
		return &PartitionRecord{}, true
	case PartitionChangeRecordType:
		return &PartitionChangeRecord{}, true
	case RemoveTopicRecordType:
		return &RemoveTopicRecord{}, true
	case ConfigRecordType:
		return &ConfigRecord{}, true
	case ProducerIDsRecordType:
		return &ProducerIDsRecord{}, true
	case RegisterBrokerRecordType:
		return &RegisterBrokerRecord{}, true
	case FeatureLevelRecordType:
		return &FeatureLevelRecord{}, true
	case BrokerRegistrationChangeRecordType:
		return &BrokerRegistrationChangeRecord{}, true
	case ClusterIDRecordType:
		return &ClusterIDRecord{}, true
	case ClientQuotaRecordType:
		return &ClientQuotaRecord{}, true
	case AccessControlEntryRecordType:
		return &AccessControlEntryRecord{}, true
	case RemoveAccessControlEntryRecordType:
		return &RemoveAccessControlEntryRecord{}, true
	case UserScramCredentialRecordType:
		return &UserScramCredentialRecord{}, true
	case RemoveUserScramCredentialRecordType:
		return &RemoveUserScramCredentialRecord{}, true
	case DelegationTokenRecordType:
		return &DelegationTokenRecord{}, true
	case RemoveDelegationTokenRecordType:
		return &RemoveDelegationTokenRecord{}, true
	}
	return nil, false
}

// ClusterIDRecord sets the cluster id, once: a later record with another id
// is rejected.
type ClusterIDRecord struct {
	ClusterID string
}

func (*ClusterIDRecord) Type() RecordType { return ClusterIDRecordType }
func (*ClusterIDRecord) isRecord()        {}

// BoolPtr returns a pointer to v, for BrokerRegistrationChangeRecord.
func BoolPtr(v bool) *bool { return &v }

// Int32Ptr returns a pointer to v, for PartitionChangeRecord.Leader.
func Int32Ptr(v int32) *int32 { return &v }

// StringPtr returns a pointer to s, for ConfigRecord.Value and config maps.
func StringPtr(s string) *string { return &s }

// cloneInt32s copies a replica list so images never alias caller slices.
func cloneInt32s(s []int32) []int32 {
	if s == nil {
		return nil
	}
	return slices.Clone(s)
}
