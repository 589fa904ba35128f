package metadata

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// mustApply applies recs as the next batch (dense offsets, as LocalLog does).
func mustApply(t *testing.T, img *Image, recs ...Record) *Image {
	t.Helper()
	next, err := img.Apply(img.Offset()+int64(len(recs)), recs)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

func topicRecords(name string, id Uuid, partitions int, replicas ...int32) []Record {
	recs := []Record{&TopicRecord{Name: name, TopicID: id}}
	for p := range partitions {
		recs = append(recs, &PartitionRecord{TopicID: id, Partition: int32(p), Replicas: replicas, ISR: replicas, Leader: replicas[0]})
	}
	return recs
}

func TestImageApplyTopics(t *testing.T) {
	empty := EmptyImage()
	id := NewUuid()
	img := mustApply(t, empty, topicRecords("orders", id, 3, 1, 2)...)

	if empty.NumTopics() != 0 || empty.Offset() != -1 {
		t.Fatal("Apply modified the receiver")
	}
	if img.Offset() != 3 {
		t.Fatalf("offset %d, want 3", img.Offset())
	}
	top, ok := img.Topic("orders")
	if !ok || top.ID != id || len(top.Partitions) != 3 || top.IsInternal {
		t.Fatalf("topic %+v", top)
	}
	if byID, _ := img.TopicByID(id); byID != top {
		t.Fatal("TopicByID differs from Topic")
	}
	p, _ := img.Partition("orders", 2)
	if p.Leader != 1 || !reflect.DeepEqual(p.Replicas, []int32{1, 2}) {
		t.Fatalf("partition %+v", p)
	}

	off := mustApply(t, img, topicRecords(ConsumerOffsetsTopic, NewUuid(), 1, 1)...)
	if co, _ := off.Topic(ConsumerOffsetsTopic); !co.IsInternal {
		t.Fatal("__consumer_offsets not internal")
	}
	names := []string{}
	for _, tp := range off.Topics() {
		names = append(names, tp.Name)
	}
	if !reflect.DeepEqual(names, []string{ConsumerOffsetsTopic, "orders"}) {
		t.Fatalf("Topics() = %v", names)
	}

	leader := int32(2)
	changed := mustApply(t, off, &PartitionChangeRecord{TopicID: id, Partition: 1, Leader: &leader, ISR: []int32{2}})
	p1, _ := changed.Partition("orders", 1)
	if p1.Leader != 2 || p1.LeaderEpoch != 1 || p1.PartitionEpoch != 1 || !reflect.DeepEqual(p1.ISR, []int32{2}) {
		t.Fatalf("after change %+v", p1)
	}
	if old, _ := off.Partition("orders", 1); old.Leader != 1 || old.LeaderEpoch != 0 {
		t.Fatalf("old image changed: %+v", old)
	}

	removed := mustApply(t, changed, &RemoveTopicRecord{TopicID: id})
	if _, ok := removed.Topic("orders"); ok {
		t.Fatal("topic still present after RemoveTopicRecord")
	}
	if _, ok := removed.TopicByID(id); ok {
		t.Fatal("topic id still present after RemoveTopicRecord")
	}
	if _, ok := changed.Topic("orders"); !ok {
		t.Fatal("old image lost the topic")
	}
}

func TestImageApplyConfigs(t *testing.T) {
	id := NewUuid()
	img := mustApply(t, EmptyImage(), topicRecords("t", id, 1, 0)...)
	img = mustApply(t, img,
		&ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "t", Name: "retention.ms", Value: StringPtr("10")},
		&ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "t", Name: "cleanup.policy", Value: StringPtr("compact")},
		&ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "", Name: "log.retention.ms", Value: StringPtr("5")},
		&ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "3", Name: "log.retention.ms", Value: StringPtr("6")},
	)
	if got := img.TopicConfig("t"); !reflect.DeepEqual(got, map[string]string{"retention.ms": "10", "cleanup.policy": "compact"}) {
		t.Fatalf("topic config %v", got)
	}
	if got := img.BrokerConfig(""); got["log.retention.ms"] != "5" {
		t.Fatalf("cluster default %v", got)
	}
	if got := img.BrokerConfig("3"); got["log.retention.ms"] != "6" {
		t.Fatalf("broker 3 %v", got)
	}
	img.TopicConfig("t")["retention.ms"] = "mutated"
	if img.TopicConfig("t")["retention.ms"] != "10" {
		t.Fatal("TopicConfig returned the image's own map")
	}

	deleted := mustApply(t, img, &ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "t", Name: "retention.ms"})
	if got := deleted.TopicConfig("t"); !reflect.DeepEqual(got, map[string]string{"cleanup.policy": "compact"}) {
		t.Fatalf("after delete %v", got)
	}
	if img.TopicConfig("t")["retention.ms"] != "10" {
		t.Fatal("old image lost its config")
	}

	// Removing a topic drops its overrides: a re-created topic starts clean.
	recreated := mustApply(t, deleted, &RemoveTopicRecord{TopicID: id})
	recreated = mustApply(t, recreated, topicRecords("t", NewUuid(), 1, 0)...)
	if got := recreated.TopicConfig("t"); len(got) != 0 {
		t.Fatalf("re-created topic inherited %v", got)
	}
}

func TestImageApplyProducerIDsBrokersFeatures(t *testing.T) {
	img := mustApply(t, EmptyImage(),
		&RegisterBrokerRecord{BrokerID: 2, IncarnationID: NewUuid(), BrokerEpoch: 1},
		&RegisterBrokerRecord{BrokerID: 1, IncarnationID: NewUuid(), BrokerEpoch: 2, Fenced: true},
		&ProducerIDsRecord{BrokerID: 1, NextProducerID: 1000},
		&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 7},
	)
	if img.NextProducerID() != 1000 {
		t.Fatalf("next producer id %d", img.NextProducerID())
	}
	img = mustApply(t, img, &ProducerIDsRecord{BrokerID: 2, NextProducerID: 2000})
	if img.NextProducerID() != 2000 {
		t.Fatalf("next producer id %d", img.NextProducerID())
	}
	if bs := img.Brokers(); len(bs) != 2 || bs[0].ID != 1 || bs[1].ID != 2 {
		t.Fatalf("brokers %+v", bs)
	}
	if got := img.UnfencedBrokerIDs(); !reflect.DeepEqual(got, []int32{2}) {
		t.Fatalf("unfenced %v", got)
	}
	if img.Features()["metadata.version"] != 7 {
		t.Fatalf("features %v", img.Features())
	}
	img = mustApply(t, img, &FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 0})
	if len(img.Features()) != 0 {
		t.Fatalf("level 0 did not remove the feature: %v", img.Features())
	}
}

func TestImageApplyRejectsImpossibleRecords(t *testing.T) {
	id := NewUuid()
	base := mustApply(t, EmptyImage(), append(topicRecords("t", id, 2, 1, 2),
		&RegisterBrokerRecord{BrokerID: 1, IncarnationID: NewUuid(), BrokerEpoch: 5},
		&ProducerIDsRecord{NextProducerID: 1000})...)
	unknown := NewUuid()
	leader3 := int32(3)
	for _, tc := range []struct {
		name string
		rec  Record
	}{
		{"partition of unknown topic", &PartitionRecord{TopicID: unknown, Partition: 0, Replicas: []int32{1}, Leader: 1}},
		{"partition out of order", &PartitionRecord{TopicID: id, Partition: 5, Replicas: []int32{1}, Leader: 1}},
		{"existing partition", &PartitionRecord{TopicID: id, Partition: 1, Replicas: []int32{1}, Leader: 1}},
		{"partition without replicas", &PartitionRecord{TopicID: id, Partition: 2, Leader: -1}},
		{"duplicate replica", &PartitionRecord{TopicID: id, Partition: 2, Replicas: []int32{1, 1}, Leader: 1}},
		{"leader not a replica", &PartitionRecord{TopicID: id, Partition: 2, Replicas: []int32{1}, Leader: 4}},
		{"isr not replicas", &PartitionRecord{TopicID: id, Partition: 2, Replicas: []int32{1}, ISR: []int32{2}, Leader: 1}},
		{"change of unknown partition", &PartitionChangeRecord{TopicID: id, Partition: 9}},
		{"change to non-replica leader", &PartitionChangeRecord{TopicID: id, Partition: 0, Leader: &leader3}},
		{"duplicate topic name", &TopicRecord{Name: "t", TopicID: NewUuid()}},
		{"duplicate topic id", &TopicRecord{Name: "u", TopicID: id}},
		{"reserved topic id", &TopicRecord{Name: "u", TopicID: ZeroUuid}},
		{"invalid topic name", &TopicRecord{Name: "a/b", TopicID: NewUuid()}},
		{"remove unknown topic", &RemoveTopicRecord{TopicID: unknown}},
		{"config of unknown topic", &ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "nope", Name: "x", Value: StringPtr("1")}},
		{"config of bad broker name", &ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "b1", Name: "x", Value: StringPtr("1")}},
		{"config of unknown resource type", &ConfigRecord{ResourceType: 8, ResourceName: "x", Name: "x", Value: StringPtr("1")}},
		{"producer ids going back", &ProducerIDsRecord{NextProducerID: 500}},
		{"broker epoch going back", &RegisterBrokerRecord{BrokerID: 1, IncarnationID: NewUuid(), BrokerEpoch: 5}},
		{"nil record", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A valid record first: the whole batch must be rejected.
			recs := []Record{&TopicRecord{Name: "fine", TopicID: NewUuid()}, tc.rec}
			got, err := base.Apply(base.Offset()+2, recs)
			if !errors.Is(err, kerr.InvalidRequest) || got != nil {
				t.Fatalf("got %v, %v; want INVALID_REQUEST", got, err)
			}
			if _, ok := base.Topic("fine"); ok {
				t.Fatal("failed batch leaked into the base image")
			}
		})
	}
	if _, err := base.Apply(base.Offset(), []Record{&TopicRecord{Name: "x", TopicID: NewUuid()}}); err == nil {
		t.Fatal("Apply accepted an offset that does not advance")
	}
}

// TestImageRecordsRebuildImage: Records() is the snapshot content.
func TestImageRecordsRebuildImage(t *testing.T) {
	img := EmptyImage()
	for i := range 50 {
		img = mustApply(t, img, topicRecords(fmt.Sprintf("topic-%02d", i), NewUuid(), i%4+1, 0, 1)...)
	}
	img = mustApply(t, img,
		&ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "topic-07", Name: "retention.ms", Value: StringPtr("1")},
		&ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "", Name: "a", Value: StringPtr("b")},
		&ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "10", Name: "a", Value: StringPtr("c")},
		&RegisterBrokerRecord{BrokerID: 0, IncarnationID: NewUuid(), BrokerEpoch: 3, Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "x", Port: 1}}},
		&ProducerIDsRecord{BrokerID: 0, BrokerEpoch: 3, NextProducerID: 3000},
		&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 20},
	)
	rebuilt, err := EmptyImage().Apply(img.Offset(), img.Records())
	if err != nil {
		t.Fatal(err)
	}
	assertImagesEqual(t, rebuilt, img)
}

// assertImagesEqual compares images through their snapshot records, which
// cover every field.
func assertImagesEqual(t *testing.T, got, want *Image) {
	t.Helper()
	if got.Offset() != want.Offset() {
		t.Fatalf("offset %d, want %d", got.Offset(), want.Offset())
	}
	if g, w := got.Records(), want.Records(); !reflect.DeepEqual(g, w) {
		t.Fatalf("images differ: got %d records, want %d", len(g), len(w))
	}
	if got.NextProducerID() != want.NextProducerID() {
		t.Fatalf("next producer id %d, want %d", got.NextProducerID(), want.NextProducerID())
	}
}

// TestImageApplyCopiesFewShards checks the copy-on-write claim: one change
// to a large image leaves almost every topic shared with the old image.
func TestImageApplyCopiesFewShards(t *testing.T) {
	img := EmptyImage()
	var recs []Record
	for i := range 5000 {
		recs = append(recs, topicRecords(fmt.Sprintf("t%d", i), NewUuid(), 1, 0)...)
	}
	img = mustApply(t, img, recs...)
	next := mustApply(t, img, topicRecords("new", NewUuid(), 1, 0)...)
	shared := 0
	for i := range cowShards {
		if reflect.ValueOf(img.topics.shards[i]).Pointer() == reflect.ValueOf(next.topics.shards[i]).Pointer() {
			shared++
		}
	}
	if shared != cowShards-1 {
		t.Fatalf("%d of %d topic shards shared, want all but one", shared, cowShards)
	}
}

// TestImageGroupConfigs: ConfigRecords of resource type GROUP (KIP-848) are
// kept for any group id, existing or not, are deleted by a null value, and
// survive a snapshot.
func TestImageGroupConfigs(t *testing.T) {
	img := mustApply(t, EmptyImage(),
		&ConfigRecord{ResourceType: ConfigResourceGroup, ResourceName: "g", Name: "consumer.session.timeout.ms", Value: StringPtr("50000")},
		&ConfigRecord{ResourceType: ConfigResourceGroup, ResourceName: "g", Name: "consumer.heartbeat.interval.ms", Value: StringPtr("6000")},
		&ConfigRecord{ResourceType: ConfigResourceGroup, ResourceName: "h", Name: "consumer.heartbeat.interval.ms", Value: StringPtr("7000")},
	)
	if got := img.GroupConfig("g"); !reflect.DeepEqual(got, map[string]string{"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"}) {
		t.Fatalf("group g config %v", got)
	}
	if got := img.GroupConfigs(); len(got) != 2 || got["h"]["consumer.heartbeat.interval.ms"] != "7000" {
		t.Fatalf("group configs %v", got)
	}
	rebuilt, err := EmptyImage().Apply(img.Offset(), img.Records())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rebuilt.GroupConfigs(), img.GroupConfigs()) {
		t.Fatalf("snapshot lost group configs: %v, want %v", rebuilt.GroupConfigs(), img.GroupConfigs())
	}
	img = mustApply(t, img, &ConfigRecord{ResourceType: ConfigResourceGroup, ResourceName: "h", Name: "consumer.heartbeat.interval.ms"})
	if got := img.GroupConfigs(); len(got) != 1 || len(img.GroupConfig("h")) != 0 {
		t.Fatalf("after delete %v", got)
	}
	if _, err := img.Apply(img.Offset()+1, []Record{&ConfigRecord{ResourceType: ConfigResourceGroup, Name: "consumer.session.timeout.ms", Value: StringPtr("1")}}); err == nil {
		t.Fatal("a group config with an empty group id was applied")
	}
}
