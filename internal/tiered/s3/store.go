package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	"golang.org/x/sync/singleflight"

	"github.com/vltava/vltava/internal/tiered"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Store is a tiered.RemoteStorage on one S3 bucket.
//
// Each segment is a set of objects under
// <key.prefix><topic>-<topic id>/<partition>/<start offset>-<segment id>:
// .log, .index, .timeindex, optional .txnindex and .snapshot,
// .leader-epoch-checkpoint, and last a .rsm-manifest holding every object's
// size and CRC32C (the log's per chunk). A segment without its manifest is
// an unfinished upload.
type Store struct {
	cfg    Config
	client *s3.Client
	cache  *chunkCache // nil: off
	// recent holds the last chunks read, already checked against their
	// CRC32C: a consumer reading on fetches a 4 MiB chunk in several
	// fetches of up to max.partition.fetch.bytes each.
	recent recentChunks
	// flight makes one download of a chunk wanted by a fetch and the
	// prefetch at once; prefetches feeds the goroutine that reads the
	// chunk after the one a fetch ended in, so a consumer reading on finds
	// it ready. Close stops that goroutine.
	flight     singleflight.Group
	prefetches chan prefetch
	stop       context.CancelFunc
	stopped    chan struct{}

	mu        sync.Mutex
	manifests map[[16]byte]*manifest // by segment id; small, bounded below
}

// prefetchChunks is how many chunks past the end of a fetch are read
// ahead. Two measured no better than one on a loaded 2-core machine.
const prefetchChunks = 1

// prefetch is a chunk to read ahead.
type prefetch struct {
	md tiered.SegmentMetadata
	m  *manifest
	i  int
}

// recentChunks is a small most-recently-used list of verified chunks.
type recentChunks struct {
	mu      sync.Mutex
	entries []recentChunk // front = most recent
}

type recentChunk struct {
	id    [16]byte
	chunk int
	b     []byte
}

// recentChunkCount bounds recentChunks: with 4 MiB chunks, 32 MiB, enough
// for a few consumers reading on at once.
const recentChunkCount = 8

func (r *recentChunks) get(id [16]byte, chunk int) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, e := range r.entries {
		if e.id == id && e.chunk == chunk {
			copy(r.entries[1:i+1], r.entries[:i])
			r.entries[0] = e
			return e.b, true
		}
	}
	return nil, false
}

func (r *recentChunks) put(id [16]byte, chunk int, b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.entries) < recentChunkCount {
		r.entries = append(r.entries, recentChunk{})
	}
	copy(r.entries[1:], r.entries[:len(r.entries)-1])
	r.entries[0] = recentChunk{id: id, chunk: chunk, b: b}
}

// drop forgets a segment's chunks (it was deleted).
func (r *recentChunks) drop(id [16]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	keep := r.entries[:0]
	for _, e := range r.entries {
		if e.id != id {
			keep = append(keep, e)
		}
	}
	clear(r.entries[len(keep):])
	r.entries = keep
}

// manifest is what the .rsm-manifest object holds.
type manifest struct {
	Version    int               `json:"version"`
	ChunkSize  int               `json:"chunk_size"`
	LogSize    int64             `json:"log_size"`
	LogChunks  []uint32          `json:"log_chunks_crc32c"`
	Indexes    map[string]object `json:"indexes"`
	StartOff   int64             `json:"start_offset"`
	EndOff     int64             `json:"end_offset"`
	SegmentID  string            `json:"segment_id"`
	TopicID    string            `json:"topic_id"`
	Partition  int32             `json:"partition"`
	BrokerID   int32             `json:"broker_id"`
	MaxTimesMs int64             `json:"max_timestamp_ms"`
}

type object struct {
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
}

const maxCachedManifests = 4096

// New connects to the bucket (credentials from the AWS default chain) and
// checks it is reachable, so a wrong endpoint or credentials fail at start.
func New(ctx context.Context, cfg Config) (*Store, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(cfg.Region))
	if err != nil {
		return nil, fmt.Errorf("s3 remote storage: loading AWS configuration: %w", err)
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		// Checksums are ours (CRC32C per chunk in the manifest); the SDK's
		// default trailing checksums are not understood by every
		// S3-compatible server.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	s := &Store{
		cfg:        cfg,
		client:     client,
		manifests:  map[[16]byte]*manifest{},
		prefetches: make(chan prefetch, 16),
		stopped:    make(chan struct{}),
	}
	if cfg.CacheSize > 0 && cfg.CacheDir != "" {
		if s.cache, err = newChunkCache(cfg.CacheDir, cfg.CacheSize); err != nil {
			return nil, err
		}
	}
	pctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	go s.prefetchLoop(pctx)
	return s, nil
}

// prefetchLoop reads ahead the chunks fetches ask for, one at a time, until
// Close. A failed read ahead is forgotten: the fetch that wants the chunk
// reads it itself and reports the error.
func (s *Store) prefetchLoop(ctx context.Context) {
	defer close(s.stopped)
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-s.prefetches:
			if _, ok := s.recent.get(p.md.ID, p.i); !ok {
				_, _ = s.chunk(ctx, p.md, p.m, p.i)
			}
		}
	}
}

// Check verifies that the bucket is reachable with the credentials.
func (s *Store) Check(ctx context.Context) error {
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.cfg.Bucket)})
	if err != nil {
		return fmt.Errorf("s3 remote storage: bucket %q at %s: %w", s.cfg.Bucket, s.endpointName(), err)
	}
	return nil
}

func (s *Store) endpointName() string {
	if s.cfg.Endpoint == "" {
		return "AWS S3 (" + s.cfg.Region + ")"
	}
	return s.cfg.Endpoint
}

func b64(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// key is the object key of one of the segment's objects.
func (s *Store) key(md tiered.SegmentMetadata, suffix string) string {
	return fmt.Sprintf("%s%s-%s/%d/%020d-%s.%s", s.cfg.KeyPrefix, md.Topic, b64(md.TopicID), md.Partition,
		md.StartOffset, b64(md.ID), suffix)
}

// PartitionPrefix is the key prefix of every object of a partition, for
// listing (orphan search, topic deletion).
func (s *Store) PartitionPrefix(topic string, topicID [16]byte, partition int32) string {
	return fmt.Sprintf("%s%s-%s/%d/", s.cfg.KeyPrefix, topic, b64(topicID), partition)
}

func (s *Store) put(ctx context.Context, key string, body io.ReadSeeker, size int64, opts ...func(*s3.Options)) error {
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(key),
		Body: body, ContentLength: aws.Int64(size)}, opts...)
	return err
}

// signsPayload reports whether SigV4 signs the body's SHA-256: over plain
// HTTP it does; over HTTPS the SDK sends the payload unsigned, as TLS
// carries its integrity.
func (s *Store) signsPayload() bool { return strings.HasPrefix(s.cfg.Endpoint, "http://") }

// withPayloadHash gives the SDK a body's SHA-256 computed beforehand, so it
// does not read the body once more to compute it.
func withPayloadHash(sum []byte) func(*s3.Options) {
	h := hex.EncodeToString(sum)
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("PrecomputedPayloadHash",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					return next.HandleInitialize(v4.SetPayloadHash(ctx, h), in)
				}), middleware.After)
		})
	}
}

// Copy implements tiered.RemoteStorage: the log (checksummed per chunk
// first, then streamed from the file), the indexes, and the manifest last.
func (s *Store) Copy(ctx context.Context, md tiered.SegmentMetadata, data tiered.SegmentData) ([]byte, error) {
	m := &manifest{Version: 1, ChunkSize: s.cfg.ChunkSize, Indexes: map[string]object{},
		StartOff: md.StartOffset, EndOff: md.EndOffset, SegmentID: b64(md.ID), TopicID: b64(md.TopicID),
		Partition: md.Partition, BrokerID: md.BrokerID, MaxTimesMs: md.MaxTimestamp}
	f, err := os.Open(data.Log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// One pass over the file: the CRC32C of every chunk and, where the
	// request signs it, the body's SHA-256.
	cr := &chunkSummer{r: f, size: s.cfg.ChunkSize}
	var sha hash.Hash
	if s.signsPayload() {
		sha = sha256.New()
	}
	buf := make([]byte, 1<<20)
	for {
		n, err := cr.Read(buf)
		if sha != nil {
			sha.Write(buf[:n])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	m.LogSize, m.LogChunks = cr.total, cr.finish()
	var opts []func(*s3.Options)
	if sha != nil {
		opts = append(opts, withPayloadHash(sha.Sum(nil)))
	}
	if err := s.put(ctx, s.key(md, "log"), io.NewSectionReader(f, 0, m.LogSize), m.LogSize, opts...); err != nil {
		return nil, fmt.Errorf("uploading %s: %w", s.key(md, "log"), err)
	}
	files := []struct {
		t    tiered.IndexType
		path string
		mem  []byte
	}{
		{tiered.OffsetIndex, data.OffsetIndex, nil},
		{tiered.TimeIndex, data.TimeIndex, nil},
		{tiered.TransactionIndex, data.TxnIndex, nil},
		{tiered.ProducerSnapshotIndex, data.ProducerSnapshot, nil},
		{tiered.LeaderEpochIndex, "", data.LeaderEpochs},
	}
	for _, x := range files {
		b := x.mem
		switch {
		case x.path != "":
			if b, err = os.ReadFile(x.path); err != nil {
				return nil, err
			}
		case x.t == tiered.OffsetIndex || x.t == tiered.TimeIndex:
			b = []byte{} // a segment too small to have index entries yet
		case x.mem == nil:
			continue
		}
		if err := s.put(ctx, s.key(md, x.t.Suffix()), bytes.NewReader(b), int64(len(b))); err != nil {
			return nil, fmt.Errorf("uploading %s: %w", s.key(md, x.t.Suffix()), err)
		}
		m.Indexes[x.t.Suffix()] = object{Size: int64(len(b)), CRC32C: crc32.Checksum(b, castagnoli)}
	}
	mb, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if err := s.put(ctx, s.key(md, "rsm-manifest"), bytes.NewReader(mb), int64(len(mb))); err != nil {
		return nil, fmt.Errorf("uploading manifest: %w", err)
	}
	s.remember(md.ID, m)
	return nil, nil
}

func (s *Store) remember(id [16]byte, m *manifest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.manifests) >= maxCachedManifests {
		for k := range s.manifests { // drop an arbitrary one: manifests are cheap to refetch
			delete(s.manifests, k)
			break
		}
	}
	s.manifests[id] = m
}

func (s *Store) manifestOf(ctx context.Context, md tiered.SegmentMetadata) (*manifest, error) {
	s.mu.Lock()
	m := s.manifests[md.ID]
	s.mu.Unlock()
	if m != nil {
		return m, nil
	}
	b, err := s.get(ctx, s.key(md, "rsm-manifest"), -1, -1)
	if err != nil {
		return nil, err
	}
	m = new(manifest)
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("%w: manifest of %s: %v", tiered.ErrCorrupt, md.SegmentID, err)
	}
	if m.ChunkSize <= 0 || int64(len(m.LogChunks)) != (m.LogSize+int64(m.ChunkSize)-1)/int64(m.ChunkSize) {
		return nil, fmt.Errorf("%w: manifest of %s does not describe its log", tiered.ErrCorrupt, md.SegmentID)
	}
	s.remember(md.ID, m)
	return m, nil
}

// get reads a whole object, or the byte range [from, to] when from >= 0.
func (s *Store) get(ctx context.Context, key string, from, to int64) ([]byte, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(key)}
	if from >= 0 {
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", from, to))
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		var nsk *types.NoSuchKey
		var api smithy.APIError
		if errors.As(err, &nsk) || (errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound")) {
			return nil, fmt.Errorf("%w: %s", tiered.ErrNotFound, key)
		}
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

// chunk returns log chunk i of the segment, verified against the manifest:
// from the cache, else fetched (and refetched once on a checksum mismatch).
// The chunk returned is shared (recentChunks): callers copy out of it and
// never write to it.
func (s *Store) chunk(ctx context.Context, md tiered.SegmentMetadata, m *manifest, i int) ([]byte, error) {
	if b, ok := s.recent.get(md.ID, i); ok {
		return b, nil
	}
	v, err, _ := s.flight.Do(fmt.Sprintf("%x/%d", md.ID, i), func() (any, error) { return s.loadChunk(ctx, md, m, i) })
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// loadChunk reads chunk i from the chunk cache or the store, checked
// against its CRC32C (a bad copy is fetched once more, then refused).
func (s *Store) loadChunk(ctx context.Context, md tiered.SegmentMetadata, m *manifest, i int) ([]byte, error) {
	if s.cache != nil {
		if b, ok := s.cache.get(md.ID, i); ok && crc32.Checksum(b, castagnoli) == m.LogChunks[i] {
			s.recent.put(md.ID, i, b)
			return b, nil
		}
	}
	from := int64(i) * int64(m.ChunkSize)
	to := min(from+int64(m.ChunkSize), m.LogSize) - 1
	var b []byte
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		b, err = s.get(ctx, s.key(md, "log"), from, to)
		if err != nil {
			return nil, err
		}
		if int64(len(b)) == to-from+1 && crc32.Checksum(b, castagnoli) == m.LogChunks[i] {
			if s.cache != nil {
				s.cache.put(md.ID, i, b)
			}
			s.recent.put(md.ID, i, b)
			return b, nil
		}
	}
	return nil, fmt.Errorf("%w: chunk %d of %s fails its checksum", tiered.ErrCorrupt, i, md.SegmentID)
}

// FetchSegment implements tiered.RemoteStorage. end is clamped to the log's
// size: Kafka asks for up to a position it cannot know exactly.
func (s *Store) FetchSegment(ctx context.Context, md tiered.SegmentMetadata, start, end int64) (io.ReadCloser, error) {
	m, err := s.manifestOf(ctx, md)
	if err != nil {
		return nil, err
	}
	if end < 0 || end >= m.LogSize {
		end = m.LogSize - 1
	}
	if start < 0 || start > end {
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	cs := int64(m.ChunkSize)
	out := make([]byte, 0, end-start+1)
	for i := int(start / cs); int64(i)*cs <= end; i++ {
		b, err := s.chunk(ctx, md, m, i)
		if err != nil {
			return nil, err
		}
		lo, hi := int64(0), int64(len(b))
		if base := int64(i) * cs; start > base {
			lo = start - base
		}
		if base := int64(i) * cs; end < base+hi-1 {
			hi = end - base + 1
		}
		out = append(out, b[lo:hi]...)
	}
	// Read the next chunks ahead, unless the queue is full.
	for next := int(end/cs) + 1; next <= int(end/cs)+prefetchChunks && int64(next)*cs < m.LogSize; next++ {
		select {
		case s.prefetches <- prefetch{md: md, m: m, i: next}:
		default:
		}
	}
	return io.NopCloser(bytes.NewReader(out)), nil
}

// FetchIndex implements tiered.RemoteStorage.
func (s *Store) FetchIndex(ctx context.Context, md tiered.SegmentMetadata, t tiered.IndexType) (io.ReadCloser, error) {
	m, err := s.manifestOf(ctx, md)
	if err != nil {
		return nil, err
	}
	o, ok := m.Indexes[t.Suffix()]
	if !ok {
		return nil, fmt.Errorf("%w: %s has no %s", tiered.ErrNotFound, md.SegmentID, t.Suffix())
	}
	for attempt := 0; attempt < 2; attempt++ {
		b, err := s.get(ctx, s.key(md, t.Suffix()), -1, -1)
		if err != nil {
			return nil, err
		}
		if int64(len(b)) == o.Size && crc32.Checksum(b, castagnoli) == o.CRC32C {
			return io.NopCloser(bytes.NewReader(b)), nil
		}
	}
	return nil, fmt.Errorf("%w: %s of %s fails its checksum", tiered.ErrCorrupt, t.Suffix(), md.SegmentID)
}

// Delete implements tiered.RemoteStorage: the manifest first, so a delete
// cut short leaves an orphan (objects without a manifest), never a manifest
// naming missing objects.
func (s *Store) Delete(ctx context.Context, md tiered.SegmentMetadata) error {
	keys := []string{s.key(md, "rsm-manifest"), s.key(md, "log")}
	for _, t := range []tiered.IndexType{tiered.OffsetIndex, tiered.TimeIndex, tiered.TransactionIndex, tiered.ProducerSnapshotIndex, tiered.LeaderEpochIndex} {
		keys = append(keys, s.key(md, t.Suffix()))
	}
	for _, k := range keys {
		if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(k)}); err != nil {
			var api smithy.APIError
			if errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound") {
				continue
			}
			return fmt.Errorf("deleting %s: %w", k, err)
		}
	}
	s.mu.Lock()
	delete(s.manifests, md.ID)
	s.mu.Unlock()
	s.recent.drop(md.ID)
	if s.cache != nil {
		s.cache.drop(md.ID)
	}
	return nil
}

// List returns every object key under prefix with its size.
func (s *Store) List(ctx context.Context, prefix string) (map[string]int64, error) {
	out := map[string]int64{}
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(s.cfg.Bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			out[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
		}
	}
	return out, nil
}

// DeleteKey removes one object by key (orphan clean-up).
func (s *Store) DeleteKey(ctx context.Context, key string) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(key)})
	return err
}

// Close implements tiered.RemoteStorage.
func (s *Store) Close() error {
	s.stop()
	<-s.stopped
	return nil
}

// chunkSummer passes a reader through, computing the CRC32C of every
// size-byte chunk.
type chunkSummer struct {
	r     io.Reader
	size  int
	total int64
	cur   uint32
	fill  int
	sums  []uint32
}

func (c *chunkSummer) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	b := p[:n]
	c.total += int64(n)
	for len(b) > 0 {
		take := min(len(b), c.size-c.fill)
		c.cur = crc32.Update(c.cur, castagnoli, b[:take])
		c.fill += take
		b = b[take:]
		if c.fill == c.size {
			c.sums = append(c.sums, c.cur)
			c.cur, c.fill = 0, 0
		}
	}
	return n, err
}

func (c *chunkSummer) finish() []uint32 {
	if c.fill > 0 {
		c.sums = append(c.sums, c.cur)
		c.cur, c.fill = 0, 0
	}
	return c.sums
}
