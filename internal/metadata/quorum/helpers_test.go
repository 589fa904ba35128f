package quorum

import (
	"reflect"
	"testing"

	"github.com/vltava/vltava/internal/metadata"
)

func mustApply(t *testing.T, img *metadata.Image, recs ...metadata.Record) *metadata.Image {
	t.Helper()
	next, err := img.Apply(img.Offset()+int64(len(recs)), recs)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

func topicRecords(name string, id metadata.Uuid, partitions int, replicas ...int32) []metadata.Record {
	recs := []metadata.Record{&metadata.TopicRecord{Name: name, TopicID: id}}
	for p := range partitions {
		recs = append(recs, &metadata.PartitionRecord{TopicID: id, Partition: int32(p), Replicas: replicas, ISR: replicas, Leader: replicas[0]})
	}
	return recs
}

func mustTopic(t *testing.T, img *metadata.Image, name string) *metadata.TopicImage {
	t.Helper()
	top, ok := img.Topic(name)
	if !ok {
		t.Fatalf("no topic %q", name)
	}
	return top
}

func assertImagesEqual(t *testing.T, got, want *metadata.Image) {
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
