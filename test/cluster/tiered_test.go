package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/testing/s3server"
)

// tieredRecord is record i's value: its index, padded to 1 KiB.
func tieredRecord(i int) []byte {
	v := []byte(fmt.Sprintf("%08d|", i))
	return append(v, strings.Repeat("t", 1024-len(v))...)
}

// remoteSegment is what a finished upload's manifest says of its segment.
type remoteSegment struct {
	Start, End int64
	Broker     int32
	ID         string
}

// remoteSegments reads the manifests in the bucket (one per finished
// upload) and counts the segment logs without one (unfinished uploads).
func remoteSegments(t *testing.T, srv *s3server.Server) (finished []remoteSegment, unfinished int) {
	t.Helper()
	logs, manifests := map[string]bool{}, map[string]bool{}
	err := filepath.WalkDir(filepath.Join(srv.Root, "tiered"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir // the server's own
			}
			return nil
		}
		switch {
		case strings.HasSuffix(path, ".log"):
			logs[strings.TrimSuffix(path, ".log")] = true
		case strings.HasSuffix(path, ".rsm-manifest"):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			var m struct {
				Start  int64  `json:"start_offset"`
				End    int64  `json:"end_offset"`
				Broker int32  `json:"broker_id"`
				ID     string `json:"segment_id"`
			}
			if err := json.Unmarshal(b, &m); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			finished = append(finished, remoteSegment{m.Start, m.End, m.Broker, m.ID})
			manifests[strings.TrimSuffix(path, ".rsm-manifest")] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for base := range logs {
		if !manifests[base] {
			unfinished++
		}
	}
	slices.SortFunc(finished, func(a, b remoteSegment) int {
		if a.Start != b.Start {
			return int(a.Start - b.Start)
		}
		return int(a.End - b.End)
	})
	return finished, unfinished
}

// checkRemoteCoverage says whether the finished segments cover [0, upTo]
// with no gap and no segment uploaded twice (the same offsets twice).
// Overlaps of different ranges are allowed: replicas roll their segments
// at their own points, and a new leader copies a straddling segment whole.
func checkRemoteCoverage(segs []remoteSegment, upTo int64) error {
	next := int64(0)
	for i, s := range segs {
		if i > 0 && s.Start == segs[i-1].Start && s.End == segs[i-1].End {
			return fmt.Errorf("offsets %d-%d uploaded twice (%s by node %d, %s by node %d)", s.Start, s.End, segs[i-1].ID, segs[i-1].Broker, s.ID, s.Broker)
		}
		if s.Start > next {
			return fmt.Errorf("offsets %d-%d are in no remote segment", next, s.Start-1)
		}
		next = max(next, s.End+1)
	}
	if next <= upTo {
		return fmt.Errorf("the remote tier ends at %d, want past %d", next-1, upTo)
	}
	return nil
}

// TestTieredStorageSurvivesLeaderKills SIGKILLs the leader of a tiered
// partition while it uploads, on 3 nodes and a real S3 server: the new
// leader resumes the uploads, the bucket ends with every offset in a
// finished segment, none uploaded twice and no unfinished upload left;
// the killed node comes back behind the new leader's local log start and
// rebuilds from the remote tier, and after a second kill every record
// reads back from offset 0, in order, from whichever node leads.
func TestTieredStorageSurvivesLeaderKills(t *testing.T) {
	const topic = "tiered"
	srv := s3server.Start(t, "tiered")
	none := filepath.Join(t.TempDir(), "none")
	c := StartCluster(t,
		WithEnv("AWS_ACCESS_KEY_ID", srv.AccessKey), WithEnv("AWS_SECRET_ACCESS_KEY", srv.SecretKey),
		WithEnv("AWS_CONFIG_FILE", none), WithEnv("AWS_SHARED_CREDENTIALS_FILE", none),
		WithOverride("remote.log.storage.system.enable", "true"),
		WithOverride("rsm.config.storage.s3.bucket.name", "tiered"),
		WithOverride("rsm.config.storage.s3.endpoint.url", srv.Endpoint),
		WithOverride("rsm.config.storage.s3.region", srv.Region),
		WithOverride("rsm.config.storage.s3.path.style.access.enabled", "true"),
		WithOverride("rsm.config.chunk.size", "65536"),
		WithOverride("remote.log.manager.task.interval.ms", "200"),
		WithOverride("log.retention.check.interval.ms", "300"),
	)
	c.createTopic(topic, 1, 3, map[string]string{
		"min.insync.replicas":   "2",
		"remote.storage.enable": "true",
		"segment.bytes":         "131072",
		"local.retention.bytes": "262144",
		"retention.bytes":       "-1",
	})
	prod := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(32<<10),
		kgo.RecordRetries(100), kgo.RetryTimeout(2*time.Minute))
	defer prod.Close()
	next := 0
	produce := func(n int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		rs := make([]*kgo.Record, 0, n)
		for i := next; i < next+n; i++ {
			rs = append(rs, &kgo.Record{Value: tieredRecord(i)})
		}
		for _, r := range prod.ProduceSync(ctx, rs...) {
			if r.Err != nil {
				t.Fatalf("produce: %v", r.Err)
			}
		}
		next += n
	}

	// 4 MiB, 32 segments; the leader dies once its first upload is done,
	// with the rest of them to go.
	view := c.waitFullyReplicated(topic, 1, time.Minute)
	first := view.Partitions[0].Leader
	produce(4096)
	waitFor(t, time.Minute, "the first finished upload", func() (bool, string) {
		segs, _ := remoteSegments(t, srv)
		return len(segs) > 0, fmt.Sprintf("%d finished", len(segs))
	})
	segs, _ := remoteSegments(t, srv)
	logf(t, "killing node %d, leader, with %d segments uploaded", first, len(segs))
	c.Node(first).Kill()
	c.waitTopic(topic, time.Minute, "a new leader", func(v topicView) bool {
		return v.Partitions[0].Leader >= 0 && v.Partitions[0].Leader != first
	}, first)
	produce(2048)

	second := int32(-1)
	// Everything but the active segment and the last one rolled (~128
	// records each) is uploaded.
	upTo := int64(next) - 1 - 256
	waitFor(t, 2*time.Minute, "the new leader to upload the rest", func() (bool, string) {
		segs, unfinished := remoteSegments(t, srv)
		err := checkRemoteCoverage(segs, upTo)
		if err != nil || unfinished > 0 {
			return false, fmt.Sprintf("%d finished, %d unfinished: %v", len(segs), unfinished, err)
		}
		return true, ""
	})
	segs, _ = remoteSegments(t, srv)
	for _, s := range segs {
		if s.Broker != first {
			second = s.Broker
		}
	}
	if second < 0 {
		t.Fatalf("no segment uploaded by a node other than %d: %+v", first, segs)
	}
	logf(t, "node %d resumed: %d segments in the bucket", second, len(segs))

	// The killed node is behind the new leader's local log start: it
	// rebuilds its state from the remote tier and joins the ISR again.
	c.Node(first).Restart()
	c.waitFullyReplicated(topic, 1, 2*time.Minute)
	// It got there by OFFSET_MOVED_TO_TIERED_STORAGE (KIP-405), not by
	// fetching the new leader's whole log again.
	if !strings.Contains(c.Node(first).Output(), "follower fell below the leader's local log start of a tiered partition") {
		t.Fatalf("node %d rejoined without being told its offset moved to tiered storage", first)
	}
	produce(512)
	view = c.waitFullyReplicated(topic, 1, 2*time.Minute)
	leader := view.Partitions[0].Leader
	logf(t, "killing node %d, leader", leader)
	c.Node(leader).Kill()
	view = c.waitTopic(topic, time.Minute, "a new leader", func(v topicView) bool {
		return v.Partitions[0].Leader >= 0 && v.Partitions[0].Leader != leader
	}, leader)
	logf(t, "reading back from node %d", view.Partitions[0].Leader)

	if e := earliestOffset(t, c, topic); e != 0 {
		t.Fatalf("earliest offset %d, want 0", e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cons := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
	defer cons.Close()
	for got := 0; got < next; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", got, next)
		}
		fs.EachError(func(_ string, _ int32, err error) { logf(t, "fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(got) || string(r.Value) != string(tieredRecord(got)) {
				t.Fatalf("record at offset %d (%.9q), want offset %d", r.Offset, r.Value, got)
			}
			got++
		})
	}
}

// earliestOffset is ListOffsets(-2) of partition 0 from its leader.
func earliestOffset(t *testing.T, c *Cluster, topic string) int64 {
	t.Helper()
	cl := c.Client()
	defer cl.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -2
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	var off int64
	waitFor(t, time.Minute, "ListOffsets(earliest)", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return false, err.Error()
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			return false, fmt.Sprintf("error %d", p.ErrorCode)
		}
		off = p.Offset
		return true, ""
	})
	return off
}
