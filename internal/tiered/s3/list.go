package s3

// Finding a partition's segments from the store alone, without
// __remote_log_metadata: for offline inspection (vltava dump-log --remote),
// which may run with no broker up. The manifests are the store's own record
// of what a finished copy holds; the metadata topic is not consulted, so a
// segment whose deletion started but whose manifest is still there is
// listed too.

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/vltava/vltava/internal/tiered"
)

// manifestSuffix names the object a finished copy writes last.
const manifestSuffix = "rsm-manifest"

// RemoteSegment is one segment found in the store. SegmentMetadata carries
// what the object names and the manifest tell: ids, start and end offsets,
// max timestamp, the copying broker and the log's size; its State is
// CopyFinished for a segment with a manifest and CopyStarted for objects
// without one (an unfinished upload, or an orphan waiting for clean-up).
type RemoteSegment struct {
	tiered.SegmentMetadata
	// ManifestKey is the manifest's object key.
	ManifestKey string
	// Objects are the segment's object keys by suffix ("log", "index",
	// "rsm-manifest", ...), as listed.
	Objects map[string]string
	// Indexes are the indexes the manifest records, in IndexType order.
	Indexes []tiered.IndexType
	// ChunkSize is the unit the log's CRC32Cs cover (from the manifest).
	ChunkSize int
	// Err is why the manifest could not be read (missing, unreadable or
	// not describing this segment); the segment cannot be fetched then.
	Err error
}

// PartitionSegments is what the store holds of one partition under one
// topic id; a topic deleted and created again under the same name has one
// per id.
type PartitionSegments struct {
	Topic     string
	TopicID   [16]byte
	Partition int32
	// Prefix is the key prefix of the partition's objects.
	Prefix string
	// Segments are ordered by start offset, then segment id.
	Segments []RemoteSegment
}

// ListSegments finds every segment of topic's partition in the bucket,
// under each topic id the topic's name has had, reading each segment's
// manifest.
func (s *Store) ListSegments(ctx context.Context, topic string, partition int32) ([]PartitionSegments, error) {
	ids, err := s.topicIDs(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []PartitionSegments
	for _, id := range ids {
		ps := PartitionSegments{Topic: topic, TopicID: id, Partition: partition, Prefix: s.PartitionPrefix(topic, id, partition)}
		keys, err := s.List(ctx, ps.Prefix)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", ps.Prefix, err)
		}
		if len(keys) == 0 {
			continue // the topic id has objects of other partitions only
		}
		ps.Segments = s.segmentsOf(ctx, ps, keys)
		out = append(out, ps)
	}
	return out, nil
}

// topicIDs lists the topic ids the bucket holds objects under for a topic's
// name: the prefixes <key.prefix><topic>-<id>/. A longer topic name sharing
// the prefix ("orders-eu" for "orders") is told apart by the id's exact
// form: 22 characters of unpadded URL base64.
func (s *Store) topicIDs(ctx context.Context, topic string) ([][16]byte, error) {
	prefix := s.cfg.KeyPrefix + topic + "-"
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(s.cfg.Bucket),
		Prefix: aws.String(prefix), Delimiter: aws.String("/")})
	var ids [][16]byte
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3 remote storage: listing %s in bucket %q at %s: %w", prefix, s.cfg.Bucket, s.endpointName(), err)
		}
		for _, cp := range page.CommonPrefixes {
			rest := strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), prefix), "/")
			if id, ok := parseB64ID(rest); ok {
				ids = append(ids, id)
			}
		}
	}
	sort.Slice(ids, func(i, j int) bool { return b64(ids[i]) < b64(ids[j]) })
	return ids, nil
}

func parseB64ID(s string) ([16]byte, bool) {
	var id [16]byte
	if len(s) != 22 {
		return id, false
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, false
	}
	copy(id[:], b)
	return id, true
}

// parseObjectName splits a segment object's name within its partition,
// <20-digit start offset>-<segment id>.<suffix>, as key writes it.
func parseObjectName(name string) (start int64, id [16]byte, suffix string, ok bool) {
	if len(name) < 20+1+22+2 || name[20] != '-' || name[43] != '.' {
		return 0, id, "", false
	}
	start, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil || start < 0 {
		return 0, id, "", false
	}
	if id, ok = parseB64ID(name[21:43]); !ok {
		return 0, id, "", false
	}
	return start, id, name[44:], true
}

// segmentsOf groups a partition's object keys by segment and reads the
// manifest of each. Keys that are not segment objects are left out.
func (s *Store) segmentsOf(ctx context.Context, ps PartitionSegments, keys map[string]int64) []RemoteSegment {
	bySegment := map[[16]byte]*RemoteSegment{}
	for key := range keys {
		start, id, suffix, ok := parseObjectName(strings.TrimPrefix(key, ps.Prefix))
		if !ok {
			continue
		}
		rs := bySegment[id]
		if rs == nil {
			rs = &RemoteSegment{Objects: map[string]string{}}
			rs.Topic, rs.TopicID, rs.Partition, rs.ID = ps.Topic, ps.TopicID, ps.Partition, id
			rs.StartOffset, rs.EndOffset, rs.State = start, -1, tiered.CopyStarted
			bySegment[id] = rs
		}
		rs.Objects[suffix] = key
	}
	out := make([]RemoteSegment, 0, len(bySegment))
	for _, rs := range bySegment {
		rs.ManifestKey = s.key(rs.SegmentMetadata, manifestSuffix)
		if _, ok := rs.Objects[manifestSuffix]; !ok {
			rs.Err = fmt.Errorf("%w: no manifest: an unfinished upload, or an orphan left to be deleted", tiered.ErrNotFound)
		} else {
			s.readManifest(ctx, rs)
		}
		out = append(out, *rs)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].StartOffset != out[j].StartOffset {
			return out[i].StartOffset < out[j].StartOffset
		}
		return b64(out[i].ID) < b64(out[j].ID)
	})
	return out
}

// readManifest fills rs from its manifest (through manifestOf, which checks
// that the manifest describes its log), or sets rs.Err.
func (s *Store) readManifest(ctx context.Context, rs *RemoteSegment) {
	m, err := s.manifestOf(ctx, rs.SegmentMetadata)
	if err != nil {
		rs.Err = err
		return
	}
	if m.SegmentID != b64(rs.ID) || m.TopicID != b64(rs.TopicID) || m.Partition != rs.Partition || m.StartOff != rs.StartOffset {
		rs.Err = fmt.Errorf("%w: manifest %s names segment %s of topic id %s partition %d from offset %d, not the segment of its name",
			tiered.ErrCorrupt, rs.ManifestKey, m.SegmentID, m.TopicID, m.Partition, m.StartOff)
		return
	}
	rs.EndOffset, rs.MaxTimestamp, rs.BrokerID, rs.SizeInBytes = m.EndOff, m.MaxTimesMs, m.BrokerID, m.LogSize
	rs.ChunkSize, rs.State = m.ChunkSize, tiered.CopyFinished
	for _, t := range []tiered.IndexType{tiered.OffsetIndex, tiered.TimeIndex, tiered.ProducerSnapshotIndex, tiered.TransactionIndex, tiered.LeaderEpochIndex} {
		if _, ok := m.Indexes[t.Suffix()]; ok {
			rs.Indexes = append(rs.Indexes, t)
		}
	}
}

// ObjectKey is the key of one of the segment's objects: "log", an
// IndexType's Suffix, or "rsm-manifest".
func (s *Store) ObjectKey(md tiered.SegmentMetadata, suffix string) string { return s.key(md, suffix) }

// WriteLog writes the segment's whole log to w a chunk at a time, each
// chunk checked against the manifest's CRC32C before it is written (as
// FetchSegment checks it), so only verified bytes reach w. On an error, w
// holds the chunks before the failing one.
func (s *Store) WriteLog(ctx context.Context, md tiered.SegmentMetadata, w io.Writer) error {
	m, err := s.manifestOf(ctx, md)
	if err != nil {
		return err
	}
	for i := range m.LogChunks {
		b, err := s.chunk(ctx, md, m, i)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
