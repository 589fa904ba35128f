package compat

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
	"github.com/vltava/vltava/internal/testing/s3server"
)

// TestTieredStorageRemoteRetention applies a tiered topic's total
// retention over both tiers: with retention.bytes the remote tier is cut
// from its oldest segment until the partition fits, with retention.ms the
// remote segments whose records are all older go; either way the earliest
// offset follows the first remote segment left in the bucket, the remote
// tier still holds what is newer than the cut, and a consumer reads from
// the earliest offset to the end, every record in order.
func TestTieredStorageRemoteRetention(t *testing.T) {
	skipOnKfake(t, "tiered storage is Vltava's")
	admin := freeport.Addr(t)
	base := "http://" + admin
	b, srv := startTieredBroker(t, WithOverride("admin.listeners", base))
	adm := newAdmin(t, b)
	str := func(s string) *string { return &s }
	const n = 3072 // 3 MiB of 1 KiB records

	// settled waits until the remote tier has been cut as want says, the
	// bucket holding no segment below the earliest offset, and returns the
	// earliest offset and the remote bytes.
	settled := func(t *testing.T, topic string, want func(earliest, earliestLocal, remote int64) error) int64 {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		var earliest int64
		if err := poll.Err(2*time.Minute, func() error {
			e, err := listOffset(ctx, b, topic, -2)
			if err != nil {
				return err
			}
			el, err := listOffset(ctx, b, topic, -4)
			if err != nil {
				return err
			}
			_, remote := tierSizes(t, b, topic)
			if err := want(e, el, remote); err != nil {
				return err
			}
			if e <= 0 || e >= el {
				return fmt.Errorf("earliest offset %d, earliest-local %d: want the remote tier cut but not emptied", e, el)
			}
			starts := topicSegmentStarts(t, srv, topic)
			if len(starts) == 0 || int64(slices.Min(starts)) != e {
				return fmt.Errorf("remote segments start at %v, earliest offset %d", starts, e)
			}
			earliest = e
			t.Logf("earliest offset %d, earliest-local %d, %d remote bytes in %d segments", e, el, remote, len(starts))
			return nil
		}); err != nil {
			t.Fatalf("remote retention: %v", err)
		}
		return earliest
	}

	t.Run("retention.bytes", func(t *testing.T) {
		const retention = 1 << 20
		topic := uniqueTopic(t)
		createTopic(t, adm, topic, 1, map[string]*string{
			"remote.storage.enable": str("true"),
			"segment.bytes":         str(strconv.Itoa(outageSegmentBytes)),
			"local.retention.bytes": str(strconv.Itoa(outageLocalBytes)),
			"retention.bytes":       str(strconv.Itoa(retention)),
		})
		prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.ProducerBatchMaxBytes(64<<10))
		produceRange(t, prod, 0, n)
		prod.Close()
		e := settled(t, topic, func(_, _, remote int64) error {
			// What is left over both tiers is under retention.bytes
			// plus the segment whose deletion would take it below.
			if remote <= 0 || remote >= retention+outageSegmentBytes {
				return fmt.Errorf("%d remote bytes under retention.bytes=%d", remote, retention)
			}
			return nil
		})
		readRange(t, b, topic, int(e), n)
	})

	t.Run("retention.ms", func(t *testing.T) {
		const old = 1024 // records two hours old, the rest new
		topic := uniqueTopic(t)
		createTopic(t, adm, topic, 1, map[string]*string{
			"remote.storage.enable": str("true"),
			"segment.bytes":         str(strconv.Itoa(outageSegmentBytes)),
			"local.retention.bytes": str(strconv.Itoa(outageLocalBytes)),
			"retention.ms":          str(strconv.Itoa(int(time.Hour.Milliseconds()))),
			"retention.bytes":       str("-1"),
		})
		prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.ProducerBatchMaxBytes(64<<10))
		then := time.Now().Add(-2 * time.Hour)
		for start := 0; start < n; start += 512 {
			rs := make([]*kgo.Record, 0, 512)
			for i := start; i < start+512; i++ {
				r := &kgo.Record{Value: tieredValue(i)}
				if i < old {
					r.Timestamp = then.Add(time.Duration(i) * time.Millisecond)
				}
				rs = append(rs, r)
			}
			produceSync(t, prod, rs...)
		}
		prod.Close()
		// Segments holding only old records go; the one holding the
		// first new record stays.
		e := settled(t, topic, func(e, _, _ int64) error {
			if e > old || e < old-2*outageSegmentBytes/1024 {
				return fmt.Errorf("earliest offset %d, want the start of the segment holding offset %d", e, old)
			}
			return nil
		})
		readRange(t, b, topic, int(e), n)
	})

	if v, err := remoteSeries(base, "remotedeleterequestspersec_total"); err != nil || v == 0 {
		t.Fatalf("remote deletes %v (%v)", v, err)
	}
}

// topicSegmentStarts lists the base offsets of topic's segment logs in the
// bucket (under <key.prefix><topic>-<topic id>/<partition>/).
func topicSegmentStarts(t *testing.T, srv *s3server.Server, topic string) []int {
	t.Helper()
	root := filepath.Join(srv.Root, "tiered", "cluster-a")
	dirs, err := filepath.Glob(filepath.Join(root, topic+"-*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted while the walk ran
			}
			if err != nil || d.IsDir() || filepath.Ext(path) != ".log" {
				return err
			}
			start, _, ok := strings.Cut(filepath.Base(path), "-")
			if n, err := strconv.Atoi(start); ok && err == nil {
				out = append(out, n)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}
