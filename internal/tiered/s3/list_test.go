package s3

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/vltava/vltava/internal/tiered"
)

func TestParseObjectName(t *testing.T) {
	id := "ZmVkY2JhOTg3NjU0MzIxMA" // "fedcba9876543210"
	for _, tc := range []struct {
		name   string
		start  int64
		suffix string
		ok     bool
	}{
		{"00000000000000000100-" + id + ".log", 100, "log", true},
		{"00000000000000000100-" + id + ".leader-epoch-checkpoint", 100, "leader-epoch-checkpoint", true},
		{"00000000000000000100-" + id + ".rsm-manifest", 100, "rsm-manifest", true},
		{"0000000000000000100-" + id + ".log", 0, "", false},      // 19 digits
		{"00000000000000000100-" + id[1:] + ".log", 0, "", false}, // short id
		{"00000000000000000100-" + id + "log", 0, "", false},
		{"0000000000000000010x-" + id + ".log", 0, "", false},
		{"00000000000000000100-" + id + ".", 0, "", false},
	} {
		start, got, suffix, ok := parseObjectName(tc.name)
		if ok != tc.ok || (ok && (start != tc.start || suffix != tc.suffix || string(got[:]) != "fedcba9876543210")) {
			t.Errorf("parseObjectName(%q) = %d, %q, %v; want %d, %q, %v", tc.name, start, suffix, ok, tc.start, tc.suffix, tc.ok)
		}
	}
}

// TestListSegmentsReadsTheManifests lists a partition whose topic name is
// a prefix of another's, with one good segment, one whose manifest is
// garbage and one without a manifest.
func TestListSegmentsReadsTheManifests(t *testing.T) {
	const chunk = 64 << 10
	st, _ := startStore(t, chunk)
	ctx := context.Background()
	data, log := segmentFiles(t, 2*chunk+10)
	good := testMetadata()
	if _, err := st.Copy(ctx, good, data); err != nil {
		t.Fatal(err)
	}
	longer := good
	longer.Topic = "events-eu"
	if _, err := st.Copy(ctx, longer, data); err != nil {
		t.Fatal(err)
	}
	bad := good
	bad.StartOffset, bad.EndOffset = 200, 299
	copy(bad.ID[:], "0123456789012345")
	if _, err := st.Copy(ctx, bad, data); err != nil {
		t.Fatal(err)
	}
	garbage := []byte("{not json")
	if err := st.put(ctx, st.key(bad, "rsm-manifest"), bytes.NewReader(garbage), int64(len(garbage))); err != nil {
		t.Fatal(err)
	}
	unfinished := good
	unfinished.StartOffset = 300
	copy(unfinished.ID[:], "unfinished-copy!")
	if _, err := st.Copy(ctx, unfinished, data); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteKey(ctx, st.key(unfinished, "rsm-manifest")); err != nil {
		t.Fatal(err)
	}

	// A fresh store: nothing remembered from the copies.
	fresh, err := New(ctx, st.cfg)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := fresh.ListSegments(ctx, "events", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 1 || parts[0].TopicID != good.TopicID || len(parts[0].Segments) != 3 {
		t.Fatalf("listing = %+v, want one topic id with 3 segments", parts)
	}
	segs := parts[0].Segments
	g := segs[0]
	if g.Err != nil || g.ID != good.ID || g.StartOffset != 100 || g.EndOffset != 199 || g.SizeInBytes != int64(len(log)) ||
		g.State != tiered.CopyFinished || g.ChunkSize != chunk || len(g.Indexes) != 4 {
		t.Fatalf("good segment = %+v", g)
	}
	var buf bytes.Buffer
	if err := fresh.WriteLog(ctx, g.SegmentMetadata, &buf); err != nil || !bytes.Equal(buf.Bytes(), log) {
		t.Fatalf("WriteLog: %d bytes, %v; want the %d bytes copied", buf.Len(), err, len(log))
	}
	if !errors.Is(segs[1].Err, tiered.ErrCorrupt) || segs[1].StartOffset != 200 {
		t.Fatalf("garbage manifest: %+v", segs[1])
	}
	if !errors.Is(segs[2].Err, tiered.ErrNotFound) || segs[2].State != tiered.CopyStarted || len(segs[2].Objects) != 5 {
		t.Fatalf("unfinished upload: %+v", segs[2])
	}
	if parts, err := fresh.ListSegments(ctx, "events", 7); err != nil || len(parts) != 0 {
		t.Fatalf("a partition with no objects: %+v, %v", parts, err)
	}
}
