package tiered

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestMetadataStoreFollowsKIP405States(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(50, MetadataTopic))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	open := func() *MetadataStore {
		s, err := OpenMetadataStore(ctx, kgo.SeedBrokers(c.ListenAddrs()...))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	defer s.Close()
	md := SegmentMetadata{StartOffset: 0, EndOffset: 99, SizeInBytes: 1000, LeaderEpochs: []EpochEntry{{0, 0}}}
	md.Topic, md.Partition = "t", 3
	copy(md.TopicID[:], "0123456789abcdef")
	copy(md.ID[:], "segment-id-00001")
	if err := s.AddSegment(ctx, md); err != nil {
		t.Fatal(err)
	}
	if got := s.Segments(md.TopicID, 3, CopyFinished); len(got) != 0 {
		t.Fatalf("unfinished copy listed as finished: %v", got)
	}
	if err := s.UpdateSegment(ctx, md.SegmentID, DeleteFinished, 1, nil); err == nil {
		t.Fatal("COPY_STARTED → DELETE_FINISHED accepted")
	}
	if err := s.UpdateSegment(ctx, md.SegmentID, CopyFinished, 1, nil); err != nil {
		t.Fatal(err)
	}
	md2 := md
	md2.StartOffset, md2.EndOffset = 100, 199
	copy(md2.ID[:], "segment-id-00002")
	if err := s.AddSegment(ctx, md2); err != nil {
		t.Fatal(err)
	}
	// Another broker reading the topic from the start sees the same.
	o := open()
	defer o.Close()
	s.mu.Lock()
	ends := map[int32]int64{}
	for p, n := range s.applied {
		ends[p] = n
	}
	s.mu.Unlock()
	if err := o.CaughtUp(ctx, ends); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*MetadataStore{s, o} {
		fin := st.Segments(md.TopicID, 3, CopyFinished)
		all := st.Segments(md.TopicID, 3)
		if len(fin) != 1 || fin[0].EndOffset != 99 || len(all) != 2 || all[1].State != CopyStarted {
			t.Fatalf("finished %v, all %v", fin, all)
		}
	}
	if err := s.UpdateSegment(ctx, md.SegmentID, DeleteStarted, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateSegment(ctx, md.SegmentID, DeleteFinished, 1, nil); err != nil {
		t.Fatal(err)
	}
	if got := s.Segments(md.TopicID, 3); len(got) != 1 || got[0].StartOffset != 100 {
		t.Fatalf("after delete: %v", got)
	}
}
