package cli

// dump-log --remote: the segments tiered storage copied to the S3 store,
// found by listing the bucket (no broker needed), downloaded through the
// store's read path, so every chunk and index is checked against the CRC32C
// its manifest recorded at upload, into a temporary directory under their
// local file names, and dumped by the same decoders as local files.

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/storage"
	"github.com/vltava/vltava/internal/tiered"
	"github.com/vltava/vltava/internal/tiered/s3"
)

// remoteOptions are dump-log's remote-tier flags.
type remoteOptions struct {
	partition string // --remote TOPIC-PARTITION
	config    string // --remote-config FILE
	offset    int64  // --offset, when offsetSet
	offsetSet bool
}

// remoteSegmentInfo is the remote segment a dumped file came from (the
// --output json "remote_segment" field).
type remoteSegmentInfo struct {
	Topic        string `json:"topic"`
	TopicID      string `json:"topic_id"`
	Partition    int32  `json:"partition"`
	SegmentID    string `json:"segment_id"`
	StartOffset  int64  `json:"start_offset"`
	EndOffset    int64  `json:"end_offset"`
	MaxTimestamp int64  `json:"max_timestamp"`
	SizeInBytes  int64  `json:"size_in_bytes"`
	BrokerID     int32  `json:"broker_id"`
	Manifest     string `json:"manifest"`
}

// parseRemotePartition splits "orders-0" at its last '-'.
func parseRemotePartition(s string) (string, int32, error) {
	i := strings.LastIndexByte(s, '-')
	if i <= 0 {
		return "", 0, fmt.Errorf("--remote %q: want TOPIC-PARTITION, e.g. orders-0", s)
	}
	p, err := strconv.ParseInt(s[i+1:], 10, 32)
	if err != nil || p < 0 {
		return "", 0, fmt.Errorf("--remote %q: want TOPIC-PARTITION with a partition number ≥ 0, e.g. orders-0", s)
	}
	return s[:i], int32(p), nil
}

// loadRemoteConfig reads the store's settings from a properties file: the
// rsm.config.* keys, checked as the broker checks them (s3.ParseConfig,
// refusing unknown keys); other keys are ignored, so the broker's
// server.properties serves as it is. The chunk cache is the broker's: it
// is turned off here, so dump-log reads every byte from the store and
// writes nothing into the broker's directories; giving its keys earns a
// warning.
func loadRemoteConfig(path string) (s3.Config, []string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return s3.Config{}, nil, fmt.Errorf("--remote-config: %w", err)
	}
	props, err := config.ParseProperties(string(b))
	if err != nil {
		return s3.Config{}, nil, fmt.Errorf("--remote-config %s: %w", path, err)
	}
	rsm := map[string]string{}
	var warnings []string
	for k, v := range props {
		rest, ok := strings.CutPrefix(k, "rsm.config.")
		if !ok {
			continue
		}
		rsm[rest] = v
		if strings.HasPrefix(rest, "fetch.chunk.cache.") {
			warnings = append(warnings, fmt.Sprintf("%s: %s is the broker's fetch cache; dump-log reads the store directly and keeps no cache", path, k))
		}
	}
	if len(rsm) == 0 {
		return s3.Config{}, nil, fmt.Errorf("--remote-config %s has no rsm.config.* keys (rsm.config.storage.s3.bucket.name, rsm.config.storage.s3.endpoint.url, ...)", path)
	}
	cfg, err := s3.ParseConfig(rsm)
	if err != nil {
		return s3.Config{}, nil, fmt.Errorf("--remote-config %s: %w", path, err)
	}
	cfg.CacheDir, cfg.CacheSize = "", 0
	return cfg, warnings, nil
}

// remoteFile is one object of a segment and the local file it becomes.
type remoteFile struct {
	suffix string // the object's suffix
	index  tiered.IndexType
	isLog  bool
	local  string // the local file name
	kind   string // dumpedFile.Kind
}

// segmentFiles lists a segment's objects to fetch: the log, then the
// indexes its manifest records, under the names a partition directory
// gives them (the producer snapshot is named by the offset it was taken
// at, the segment's next offset).
func segmentFiles(seg s3.RemoteSegment) []remoteFile {
	name := func(off int64, suffix string) string { return fmt.Sprintf("%020d%s", off, suffix) }
	files := []remoteFile{{suffix: "log", isLog: true, local: name(seg.StartOffset, storage.LogFileSuffix), kind: "log"}}
	for _, t := range seg.Indexes {
		f := remoteFile{suffix: t.Suffix(), index: t}
		switch t {
		case tiered.OffsetIndex:
			f.local, f.kind = name(seg.StartOffset, storage.IndexFileSuffix), "index"
		case tiered.TimeIndex:
			f.local, f.kind = name(seg.StartOffset, storage.TimeIndexFileSuffix), "timeindex"
		case tiered.TransactionIndex:
			f.local, f.kind = name(seg.StartOffset, storage.TxnIndexFileSuffix), "txnindex"
		case tiered.ProducerSnapshotIndex:
			f.local, f.kind = name(seg.EndOffset+1, storage.SnapshotFileSuffix), "snapshot"
		case tiered.LeaderEpochIndex:
			f.local, f.kind = storage.LeaderEpochCheckpointFile, "leader-epoch-checkpoint"
		default:
			continue
		}
		files = append(files, f)
	}
	return files
}

// dumpRemote lists the partition's remote segments and dumps each (or the
// ones holding --offset).
func dumpRemote(in *invocation, o *dumpOptions, r *remoteOptions) error {
	switch {
	case r.partition == "":
		return errors.New("--remote-config and --offset go with --remote TOPIC-PARTITION")
	case r.config == "":
		return errors.New("--remote needs --remote-config FILE: the broker's rsm.config.* settings (its server.properties will do)")
	case r.offsetSet && r.offset < 0:
		return fmt.Errorf("--offset %d: want an offset ≥ 0", r.offset)
	}
	topic, partition, err := parseRemotePartition(r.partition)
	if err != nil {
		return err
	}
	cfg, warnings, err := loadRemoteConfig(r.config)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(in.stderr, "warning:", w)
	}
	st, err := s3.New(in.ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Check(in.ctx); err != nil {
		return err
	}
	parts, err := st.ListSegments(in.ctx, topic, partition)
	if err != nil {
		return err
	}
	if len(parts) == 0 {
		return fmt.Errorf("bucket %q holds no segments of %s-%d (key prefix %q)", cfg.Bucket, topic, partition, cfg.KeyPrefix)
	}
	tmp, err := os.MkdirTemp("", "vltava-dump-log-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	var dumps []dumpedFile
	failed, total, matched := 0, 0, 0
	emit := func(d dumpedFile) {
		total++
		if d.Error != "" || d.sanityFailed {
			failed++
		}
		if in.json {
			dumps = append(dumps, d)
		} else {
			printDump(in, d, o)
		}
	}
	lo, hi := int64(math.MaxInt64), int64(-1)
	for _, ps := range parts {
		for _, seg := range ps.Segments {
			if seg.Err == nil {
				lo, hi = min(lo, seg.StartOffset), max(hi, seg.EndOffset)
			}
			if r.offsetSet && !mayHold(ps.Segments, seg, r.offset) {
				continue
			}
			matched++
			if !in.json {
				printRemoteSegment(in, ps, seg)
			}
			for _, d := range dumpRemoteSegment(in, st, seg, filepath.Join(tmp, strconv.Itoa(matched)), o) {
				emit(d)
			}
		}
	}
	if r.offsetSet && matched == 0 {
		if hi < 0 {
			return fmt.Errorf("no finished remote segment of %s-%d holds offset %d: the store has none", topic, partition, r.offset)
		}
		return fmt.Errorf("no remote segment of %s-%d holds offset %d (the store's segments cover offsets %d to %d)", topic, partition, r.offset, lo, hi)
	}
	if in.json {
		if dumps == nil {
			dumps = []dumpedFile{}
		}
		if err := writeJSON(in.stdout, dumps); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d remote files could not be read", failed, total)
	}
	return nil
}

// mayHold reports whether seg is a segment --offset selects: a finished
// one whose range holds off, or one whose manifest cannot be read (its end
// is unknown) that starts at or below off with no other segment starting
// between it and off. An unfinished upload holds nothing of the partition.
func mayHold(all []s3.RemoteSegment, seg s3.RemoteSegment, off int64) bool {
	if seg.Err == nil {
		return seg.StartOffset <= off && off <= seg.EndOffset
	}
	if seg.StartOffset > off || errors.Is(seg.Err, tiered.ErrNotFound) {
		return false
	}
	for _, other := range all {
		if other.StartOffset > seg.StartOffset && other.StartOffset <= off {
			return false
		}
	}
	return true
}

func segmentInfo(seg s3.RemoteSegment) *remoteSegmentInfo {
	return &remoteSegmentInfo{Topic: seg.Topic, TopicID: b64ID(seg.TopicID), Partition: seg.Partition,
		SegmentID: b64ID(seg.ID), StartOffset: seg.StartOffset, EndOffset: seg.EndOffset, MaxTimestamp: seg.MaxTimestamp,
		SizeInBytes: seg.SizeInBytes, BrokerID: seg.BrokerID, Manifest: seg.ManifestKey}
}

// b64ID is an id as the store's keys spell it.
func b64ID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

func printRemoteSegment(in *invocation, ps s3.PartitionSegments, seg s3.RemoteSegment) {
	if seg.Err != nil {
		fmt.Fprintf(in.stdout, "Remote segment %s of %s-%d (topic id %s) from offset %d\n",
			b64ID(seg.ID), ps.Topic, ps.Partition, b64ID(ps.TopicID), seg.StartOffset)
		return
	}
	fmt.Fprintf(in.stdout, "Remote segment %s of %s-%d (topic id %s): offsets %d to %d, max timestamp %d, %d bytes, copied by broker %d\n",
		b64ID(seg.ID), ps.Topic, ps.Partition, b64ID(ps.TopicID), seg.StartOffset, seg.EndOffset, seg.MaxTimestamp,
		seg.SizeInBytes, seg.BrokerID)
}

// dumpRemoteSegment fetches a segment's objects into dir and dumps them,
// each named by its object key. An object that cannot be fetched or fails
// its checksum is an error for that file and is not decoded.
func dumpRemoteSegment(in *invocation, st *s3.Store, seg s3.RemoteSegment, dir string, o *dumpOptions) []dumpedFile {
	info := segmentInfo(seg)
	if seg.Err != nil {
		d := dumpedFile{File: seg.ManifestKey, Kind: "remote-manifest", Remote: info}
		if errors.Is(seg.Err, tiered.ErrNotFound) {
			// No manifest: a copy not finished (or its orphan). Not an
			// error of the store: the broker deletes such objects.
			d.Kind, d.Text = "unfinished-upload", fmt.Sprintf("%v; objects: %s", seg.Err, strings.Join(sortedValues(seg.Objects), ", "))
		} else {
			d.Error = seg.Err.Error()
		}
		return []dumpedFile{d}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return []dumpedFile{{File: seg.ManifestKey, Kind: "remote-manifest", Remote: info, Error: err.Error()}}
	}
	files := segmentFiles(seg)
	fetchErr := make([]error, len(files))
	var names []string // local path, object key pairs, for messages
	for i, f := range files {
		key := st.ObjectKey(seg.SegmentMetadata, f.suffix)
		path := filepath.Join(dir, f.local)
		names = append(names, path, key)
		fetchErr[i] = fetchRemoteFile(in, st, seg, f, path)
	}
	rename := strings.NewReplacer(names...)
	var out []dumpedFile
	for i, f := range files {
		key := names[2*i+1]
		if err := fetchErr[i]; err != nil {
			msg := err.Error()
			if errors.Is(err, tiered.ErrCorrupt) {
				msg += " (CRC32C mismatch with the manifest: not decoded)"
			}
			out = append(out, dumpedFile{File: key, Kind: f.kind, Remote: info, Error: msg})
			continue
		}
		d := dumpFileAs(names[2*i], key, o)
		d.Remote = info
		d.Error, d.Sanity = rename.Replace(d.Error), rename.Replace(d.Sanity)
		for j, m := range d.Mismatches {
			d.Mismatches[j] = rename.Replace(m)
		}
		out = append(out, d)
	}
	return out
}

// fetchRemoteFile downloads one object of the segment to path through the
// store's checked read path; a failed download leaves no file behind.
func fetchRemoteFile(in *invocation, st *s3.Store, seg s3.RemoteSegment, f remoteFile, path string) (err error) {
	out, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	if f.isLog {
		return st.WriteLog(in.ctx, seg.SegmentMetadata, out)
	}
	rc, err := st.FetchIndex(in.ctx, seg.SegmentMetadata, f.index)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = out.ReadFrom(rc)
	return err
}

func sortedValues(m map[string]string) []string { return slices.Sorted(maps.Values(m)) }
