package compat

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/testing/poll"
	"github.com/vltava/vltava/internal/testing/s3server"
)

// Tiered storage as a user sets it up: Kafka's broker and topic keys, the
// S3 plugin's rsm.config.* names, credentials from the AWS environment, a
// real S3-compatible server on loopback. The scale is the 2 GiB /
// 16 MiB / 64 MiB scaled down 64 times (32 MiB of 1 KiB records, 1 MiB
// segments, 2 MiB of local retention) so it runs in CI.
const (
	tieredRecords      = 32 << 10
	tieredSegmentBytes = 1 << 20
	tieredLocalBytes   = 2 << 20
)

func startTieredBroker(t *testing.T, extra ...Option) (*Broker, *s3server.Server) {
	t.Helper()
	srv := s3server.Start(t, "tiered")
	return StartBroker(t, append(tieredOptions(t, srv, srv.SecretKey), extra...)...), srv
}

// tieredOptions are the broker settings of a node tiering to srv, its
// credentials given by the AWS environment with secretKey as the secret.
func tieredOptions(t *testing.T, srv *s3server.Server, secretKey string) []Option {
	none := filepath.Join(t.TempDir(), "none")
	return []Option{
		WithEnv("AWS_ACCESS_KEY_ID="+srv.AccessKey, "AWS_SECRET_ACCESS_KEY="+secretKey,
			"AWS_CONFIG_FILE="+none, "AWS_SHARED_CREDENTIALS_FILE="+none),
		WithOverride("remote.log.storage.system.enable", "true"),
		WithOverride("rsm.config.storage.s3.bucket.name", "tiered"),
		WithOverride("rsm.config.storage.s3.endpoint.url", srv.Endpoint),
		WithOverride("rsm.config.storage.s3.region", srv.Region),
		WithOverride("rsm.config.storage.s3.path.style.access.enabled", "true"),
		WithOverride("rsm.config.key.prefix", "cluster-a/"),
		WithOverride("rsm.config.chunk.size", strconv.Itoa(256<<10)),
		WithOverride("remote.log.manager.task.interval.ms", "300"),
		WithOverride("log.retention.check.interval.ms", "300"),
	}
}

// tieredValue is record i's value: its index, then padding to 1 KiB.
func tieredValue(i int) []byte {
	v := []byte(fmt.Sprintf("%08d|", i))
	return append(v, strings.Repeat("x", 1024-len(v))...)
}

// TestTieredStorageReadsBackWhole produces 32 MiB to a tiered topic and
// checks that the local log stays within local.retention.bytes while the
// bucket holds the rest; that franz-go and kcat read from offset 0 to the
// end, every record in order; that ListOffsets by timestamp lands in a
// remote segment and earliest-local (-4) is past the remote start; and that
// all of it still holds after a restart.
func TestTieredStorageReadsBackWhole(t *testing.T) {
	skipOnKfake(t, "tiered storage is Vltava's")
	requireTool(t, "kcat")
	b, srv := startTieredBroker(t)
	adm := newAdmin(t, b)
	topic := uniqueTopic(t)
	str := func(s string) *string { return &s }
	createTopic(t, adm, topic, 1, map[string]*string{
		"remote.storage.enable": str("true"),
		"segment.bytes":         str(strconv.Itoa(tieredSegmentBytes)),
		"local.retention.bytes": str(strconv.Itoa(tieredLocalBytes)),
		"retention.bytes":       str("-1"),
	})

	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond),
		// Uncompressed, so the log holds the 32 MiB the scale is set for.
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	for start := 0; start < tieredRecords; start += 1024 {
		rs := make([]*kgo.Record, 0, 1024)
		for i := start; i < start+1024; i++ {
			rs = append(rs, &kgo.Record{Value: tieredValue(i), Timestamp: base.Add(time.Duration(i) * time.Millisecond)})
		}
		produceSync(t, prod, rs...)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// Local size: the retained bytes, the active segment and one segment
	// rolled since the last retention pass.
	const localBound = tieredLocalBytes + 2*tieredSegmentBytes
	if err := poll.Err(3*time.Minute, func() error {
		local, err := localSize(ctx, adm, topic)
		if err != nil {
			return err
		}
		if local > localBound {
			return fmt.Errorf("local size %d bytes, want ≤ %d", local, localBound)
		}
		el, err := listOffset(ctx, b, topic, -4)
		if err != nil {
			return err
		}
		if el == 0 {
			return fmt.Errorf("earliest-local offset still 0 (local size %d bytes)", local)
		}
		return nil
	}); err != nil {
		t.Fatalf("tiering did not bound the local log: %v", err)
	}
	objects, bytes := bucketUsage(t, srv)
	if objects == 0 || bytes < int64(tieredRecords)*1024-localBound {
		t.Fatalf("bucket holds %d objects, %d bytes; want the ~%d bytes not kept locally", objects, bytes, int64(tieredRecords)*1024-localBound)
	}
	t.Logf("bucket: %d objects, %d bytes", objects, bytes)

	checkReadBack := func(stage string) {
		t.Helper()
		if e, err := listOffset(ctx, b, topic, -2); err != nil || e != 0 {
			t.Fatalf("%s: earliest offset %d (%v), want 0: the remote tier's start", stage, e, err)
		}
		el, err := listOffset(ctx, b, topic, -4)
		if err != nil || el <= 0 {
			t.Fatalf("%s: earliest-local offset %d (%v), want past the remote start", stage, el, err)
		}
		// A timestamp below the local start is found in a remote segment.
		target := int(el / 2)
		offs, err := adm.ListOffsetsAfterMilli(ctx, base.Add(time.Duration(target)*time.Millisecond).UnixMilli(), topic)
		if err == nil {
			err = offs.Error()
		}
		if err != nil {
			t.Fatalf("%s: ListOffsets by timestamp: %v", stage, err)
		}
		if o, _ := offs.Lookup(topic, 0); o.Offset != int64(target) {
			t.Fatalf("%s: ListOffsets for record %d's timestamp = %d, want %d", stage, target, o.Offset, target)
		}

		// franz-go from offset 0 to the end.
		cons := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
			kgo.FetchMaxBytes(8<<20))
		next := 0
		for next < tieredRecords {
			fs := cons.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("%s: franz-go read %d of %d records: %v", stage, next, tieredRecords, err)
			}
			for _, e := range fs.Errors() {
				t.Fatalf("%s: franz-go fetch at %d: %v", stage, next, e.Err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset != int64(next) || string(r.Value) != string(tieredValue(next)) {
					t.Fatalf("%s: franz-go record at offset %d (%.9q), want offset %d", stage, r.Offset, r.Value, next)
				}
				next++
			})
		}
		cons.Close()

		// kcat (librdkafka) from the beginning to the end: offsets and the
		// index in each value, in order.
		out := runKcatFor(t, 2*time.Minute, "", "-C", "-b", b.Addr(), "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%o %s\n")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != tieredRecords {
			t.Fatalf("%s: kcat read %d records, want %d", stage, len(lines), tieredRecords)
		}
		for i, l := range lines {
			if want := fmt.Sprintf("%d %s", i, tieredValue(i)); l != want {
				t.Fatalf("%s: kcat line %d = %.20q…, want %.20q…", stage, i, l, want)
			}
		}
	}
	checkReadBack("after tiering")

	b.Stop()
	b.Restart()
	checkReadBack("after a restart")
}

// localSize is the partition's size on the broker's disks (DescribeLogDirs).
func localSize(ctx context.Context, adm *kadm.Client, topic string) (int64, error) {
	dirs, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		return 0, err
	}
	var size int64
	found := false
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == topic {
				size += p.Size
				found = true
			}
		})
	})
	if !found {
		return 0, fmt.Errorf("DescribeLogDirs has no %s[0]", topic)
	}
	return size, nil
}

// listOffset asks the broker for partition 0's offset at a special
// timestamp (-2 earliest, -4 earliest-local), at ListOffsets v8.
func listOffset(ctx context.Context, b *Broker, topic string, ts int64) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 8
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = 0
	rp.CurrentLeaderEpoch = -1
	rp.Timestamp = ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("ListOffsets answered %d topics", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return 0, fmt.Errorf("ListOffsets(%d): error %d", ts, p.ErrorCode)
	}
	return p.Offset, nil
}

// bucketUsage counts the objects and bytes the S3 server holds in the
// bucket (its posix backend keeps one file per object).
func bucketUsage(t *testing.T, srv *s3server.Server) (objects int, bytes int64) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join(srv.Root, "tiered"), func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted while the walk ran: no longer in the bucket
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			// The server's own: multipart parts in flight, locks.
			if strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		objects++
		bytes += info.Size()
		return nil
	})
	if err != nil {
		t.Fatalf("walking the bucket: %v", err)
	}
	return objects, bytes
}
