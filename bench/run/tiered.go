package main

// The tiered-storage measurements, against a real S3-compatible server on
// loopback (versitygw, as in the tests): what tiering costs produce (a node
// tiering its topic against one that is not, in pairs whose order
// alternates), the first byte of a fetch served from the remote tier against
// one served from a local log, and a sequential read of the remote part,
// cold (a just-started node, its chunk cache empty) and warm (the same read
// again), against the same records read from a node that never tiered them.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/testing/s3server"
)

const (
	tieredProduceName = "tiered on vs off: produce 1KiB acks=all p=1"
	tieredReadName    = "tiered: remote vs local reads"
	tieredBucket      = "tiered"
)

// tieredScale is the size of a measurement: the records produced, the
// topic's segment size and its local retention.
type tieredScale struct {
	records              int64
	segmentBytes, localB int64
}

func tieredSection(e env, nruns int, w func(string, ...any)) int {
	failed := 0
	if *only == "" || strings.Contains(tieredProduceName, *only) {
		records := int64(500_000)
		sc := tieredScale{records: records, segmentBytes: 16 << 20, localB: 32 << 20}
		if *smoke {
			sc = tieredScale{records: 20_000, segmentBytes: 1 << 20, localB: 2 << 20}
		}
		w("\n## Tiered storage: produce cost (%d pair(s), order alternating; %d records of 1 KiB, %d MiB segments, %d MiB kept locally)\n\n",
			nruns, sc.records, sc.segmentBytes>>20, sc.localB>>20)
		w("| measurement | tiering on | tiering off | on/off (paired median) | CPU µs/rec on | CPU µs/rec on, every upload done | CPU µs/rec off | the S3 server's CPU µs/rec |\n|---|---|---|---|---|---|---|---|\n")
		var on, off []measurement
		for i := 0; i < nruns; i++ {
			order := []bool{true, false}
			if i%2 == 1 {
				order = []bool{false, true}
			}
			for _, tiering := range order {
				m := measureTieredProduce(e, tiering, sc, i)
				if !m.ok {
					failed++
				}
				if tiering {
					on = append(on, m)
				} else {
					off = append(off, m)
				}
			}
		}
		var ratio []float64
		for i := range on {
			if on[i].ok && off[i].ok && off[i].recPerSec > 0 {
				ratio = append(ratio, on[i].recPerSec/off[i].recPerSec)
			}
		}
		var store, uploaded []float64
		for _, m := range on {
			if m.ok {
				store = append(store, m.extra["store_cpu_us_per_rec"])
				uploaded = append(uploaded, m.extra["cpu_us_per_rec_uploaded"])
			}
		}
		w("| %s | %s | %s | %.3f | %.3f | %.3f | %.3f | %.3f |\n", tieredProduceName, recRate(on), recRate(off), medianOr0(ratio),
			medianOr0(cpuPerRec(on)), medianOr0(uploaded), medianOr0(cpuPerRec(off)), medianOr0(store))
	}
	if *only == "" || strings.Contains(tieredReadName, *only) {
		sc := tieredScale{records: 256 << 10, segmentBytes: 16 << 20, localB: 32 << 20}
		if *smoke {
			sc = tieredScale{records: 16 << 10, segmentBytes: 1 << 20, localB: 2 << 20}
		}
		r, err := measureTieredReads(e, sc)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: FAILED: %v\n", tieredReadName, err)
			w("\n%s: failed (%v)\n", tieredReadName, err)
			return failed + 1
		}
		w("\n## Tiered storage: reads (%d records of 1 KiB, %d MiB segments, %d MiB kept locally; %d records, %.0f MiB, in the remote tier)\n\n",
			sc.records, sc.segmentBytes>>20, sc.localB>>20, r.remoteRecords, r.remoteMiB)
		w("| measurement | remote tier | local log | remote/local |\n|---|---|---|---|\n")
		w("| first byte of a 1 MiB fetch, ms, p50 (max) over %d offsets, cold | %.1f (%.1f) | %.1f (%.1f) | %.1f |\n",
			len(r.firstRemote), median(r.firstRemote), slices.Max(r.firstRemote), median(r.firstLocal), slices.Max(r.firstLocal),
			median(r.firstRemote)/median(r.firstLocal))
		w("| sequential read of the remote part, MB/s, cold | %.1f | %.1f | %.3f |\n", r.coldMBs, r.localMBs, r.coldMBs/r.localMBs)
		w("| the same read again, MB/s, warm (chunk cache) | %.1f | %.1f | %.3f |\n", r.warmMBs, r.localMBs, r.warmMBs/r.localMBs)
	}
	return failed
}

// startTieredS3 runs the S3-compatible server the tiering node uses. Its
// objects are kept in memory (/dev/shm) where the machine has it: a real
// object store is not on the broker's disk, and one that were would halve
// the disk bandwidth the produce path gets, which is not tiering's cost.
func startTieredS3(e env) (*s3server.Server, error) {
	base := e.base
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, "vltava-bench-s3-")
	if err != nil {
		return nil, err
	}
	return s3server.Run(dir, fmt.Sprintf("127.0.0.1:%d", freePort()), tieredBucket)
}

// stopTieredS3 stops the server and removes its objects.
func stopTieredS3(srv *s3server.Server) {
	srv.Stop()
	os.RemoveAll(filepath.Dir(srv.Root))
}

// startTieringNode starts a node tiering to srv (credentials from the AWS
// environment, as a user gives them), its chunk cache under dir.
func startTieringNode(e env, srv *s3server.Server, dir string, port int, extra ...string) (*broker, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := []string{"server", "--override", "log.dirs=" + filepath.Join(dir, "log"), "--override", "admin.listeners=",
		"--override", "rest.listeners=", "--override", "schema.registry.listeners=", "--override", "console.listeners=",
		"--log-level", "warn"}
	for _, x := range append([]string{
		"listeners=PLAINTEXT://" + addr,
		"remote.log.storage.system.enable=true",
		"rsm.config.storage.s3.bucket.name=" + tieredBucket,
		"rsm.config.storage.s3.endpoint.url=" + srv.Endpoint,
		"rsm.config.storage.s3.region=" + srv.Region,
		"rsm.config.storage.s3.path.style.access.enabled=true",
		"rsm.config.fetch.chunk.cache.path=" + filepath.Join(dir, "chunks"),
		"remote.log.manager.task.interval.ms=500",
		"log.retention.check.interval.ms=500",
	}, extra...) {
		args = append(args, "--override", x)
	}
	cmd := exec.Command(e.vltava, args...)
	none := filepath.Join(dir, "no-aws-config")
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+srv.AccessKey, "AWS_SECRET_ACCESS_KEY="+srv.SecretKey,
		"AWS_CONFIG_FILE="+none, "AWS_SHARED_CREDENTIALS_FILE="+none)
	b, _, err := launch(cmd, "vltava", addr, dir)
	return b, err
}

// createBenchTopic creates topic "bench" with one partition and the given
// configs.
func createBenchTopic(e env, b *broker, configs ...string) error {
	args := []string{"topics", "create", "bench", "--partitions", "1", "--bootstrap-server", b.addr}
	for _, c := range configs {
		args = append(args, "--config", c)
	}
	if out, err := exec.Command(e.vltava, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("topics create: %v: %s", err, out)
	}
	return nil
}

func (sc tieredScale) topicConfigs(tiering bool) []string {
	c := []string{"segment.bytes=" + strconv.FormatInt(sc.segmentBytes, 10), "retention.bytes=-1"}
	if tiering {
		c = append(c, "remote.storage.enable=true", "local.retention.bytes="+strconv.FormatInt(sc.localB, 10))
	}
	return c
}

// measureTieredProduce is one produce run on a fresh node, tiering its
// topic or not. The tiering node uploads and deletes local segments while
// the producer runs: that work is the cost measured.
func measureTieredProduce(e env, tiering bool, sc tieredScale, i int) (m measurement) {
	defer func() {
		if *verbose || !m.ok {
			fmt.Fprintf(os.Stderr, "bench: %s tiering=%v run %d: ok=%v %s (%.0f rec/s, %.2fs cpu)\n",
				tieredProduceName, tiering, i+1, m.ok, m.err, m.recPerSec, m.cpuSeconds)
		}
	}()
	dir, err := os.MkdirTemp(e.base, "tiered-")
	if err != nil {
		return measurement{err: err.Error()}
	}
	defer os.RemoveAll(dir)
	var b *broker
	storeCPU := func() float64 { return 0 }
	if tiering {
		srv, err := startTieredS3(e)
		if err != nil {
			return measurement{err: err.Error()}
		}
		defer stopTieredS3(srv)
		storeCPU = func() float64 { return procCPUSeconds(srv.Pid()) }
		b, err = startTieringNode(e, srv, dir, freePort())
		if err != nil {
			return measurement{err: err.Error()}
		}
	} else {
		b, _, err = startBroker(e, "vltava", filepath.Join(dir, "log"), freePort())
		if err != nil {
			return measurement{err: err.Error()}
		}
	}
	defer b.stop()
	if err := createBenchTopic(e, b, sc.topicConfigs(tiering)...); err != nil {
		return measurement{err: err.Error()}
	}
	cpu0, store0 := b.cpuSeconds(), storeCPU()
	rep, err := perf(e, b, "produce", "bench", "--num-records", strconv.FormatInt(sc.records, 10), "--record-size", "1024",
		"--acks", "all", "--compression", "none")
	if err != nil {
		return measurement{err: err.Error()}
	}
	m = fromReport(rep)
	m.cpuSeconds = b.cpuSeconds() - cpu0
	m.extra = map[string]float64{"store_cpu_us_per_rec": (storeCPU() - store0) * 1e6 / float64(max(m.records, 1))}
	if tiering {
		// Uploads still running when the producer is done are part of
		// the cost too: the broker's CPU until they are (and 2 s idle).
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if _, err := waitTiered(ctx, b.addr, sc.records); err != nil {
			return measurement{err: err.Error()}
		}
		m.extra["cpu_us_per_rec_uploaded"] = (b.cpuSeconds() - cpu0) * 1e6 / float64(max(m.records, 1))
	}
	m.ok = true
	return m
}

type tieredReads struct {
	remoteRecords              int64
	remoteMiB                  float64
	firstRemote, firstLocal    []float64 // ms
	coldMBs, warmMBs, localMBs float64
}

// measureTieredReads loads the same records into a tiering node and a
// plain one, waits until the tiering node keeps only its local retention,
// and reads the remote part from both.
func measureTieredReads(e env, sc tieredScale) (r tieredReads, err error) {
	srv, err := startTieredS3(e)
	if err != nil {
		return r, err
	}
	defer stopTieredS3(srv)
	tdir, err := os.MkdirTemp(e.base, "tiered-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(tdir)
	ldir, err := os.MkdirTemp(e.base, "local-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(ldir)

	tport := freePort()
	tb, err := startTieringNode(e, srv, tdir, tport)
	if err != nil {
		return r, err
	}
	defer func() { tb.stop() }()
	lb, _, err := startBroker(e, "vltava", filepath.Join(ldir, "log"), freePort())
	if err != nil {
		return r, err
	}
	defer lb.stop()
	for _, x := range []struct {
		b       *broker
		tiering bool
	}{{tb, true}, {lb, false}} {
		if err := createBenchTopic(e, x.b, sc.topicConfigs(x.tiering)...); err != nil {
			return r, err
		}
		if _, err := perf(e, x.b, "produce", "bench", "--num-records", strconv.FormatInt(sc.records, 10), "--record-size", "1024",
			"--acks", "all", "--compression", "none"); err != nil {
			return r, err
		}
	}

	// Tiered once the local start stops moving with most records remote.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	localStart, err := waitTiered(ctx, tb.addr, sc.records)
	if err != nil {
		return r, err
	}
	r.remoteRecords = localStart

	// First bytes, cold: a restarted node has an empty chunk cache and no
	// index cached. Offsets spread over the remote part, each in its own
	// chunk; the plain node reads the same offsets from its log.
	restart := func() error {
		tb.stop()
		tb, err = startTieringNode(e, srv, tdir, tport)
		return err
	}
	if err := restart(); err != nil {
		return r, err
	}
	const probes = 16
	for _, x := range []struct {
		addr string
		out  *[]float64
	}{{tb.addr, &r.firstRemote}, {lb.addr, &r.firstLocal}} {
		for k := range probes {
			off := localStart * int64(k) / probes
			d, err := firstByte(ctx, x.addr, off)
			if err != nil {
				return r, fmt.Errorf("fetch at %d from %s: %w", off, x.addr, err)
			}
			*x.out = append(*x.out, float64(d.Microseconds())/1000)
		}
	}

	if err := restart(); err != nil {
		return r, err
	}
	var bytes int64
	if r.coldMBs, bytes, err = readRange(ctx, tb.addr, localStart); err != nil {
		return r, fmt.Errorf("cold read: %w", err)
	}
	r.remoteMiB = float64(bytes) / (1 << 20)
	if r.warmMBs, _, err = readRange(ctx, tb.addr, localStart); err != nil {
		return r, fmt.Errorf("warm read: %w", err)
	}
	if r.localMBs, _, err = readRange(ctx, lb.addr, localStart); err != nil {
		return r, fmt.Errorf("local read: %w", err)
	}
	return r, nil
}

// waitTiered waits until the earliest local offset of bench-0 has passed
// 60% of the records and stayed put for two seconds, and returns it.
func waitTiered(ctx context.Context, addr string, records int64) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	last, since := int64(-1), time.Now()
	for {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "bench"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -4 // earliest local (KIP-1005)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return 0, err
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return 0, err
		}
		if p.Offset != last {
			last, since = p.Offset, time.Now()
		} else if last*10 >= records*6 && time.Since(since) >= 2*time.Second {
			return last, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("earliest local offset %d of %d records: not tiered in time", last, records)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// firstByte times one Fetch of bench-0 at offset, up to 1 MiB, from a
// client already connected, until its answer is in.
func firstByte(ctx context.Context, addr string, offset int64) (time.Duration, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("bench")
	md.Topics = append(md.Topics, mt)
	mresp, err := md.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if len(mresp.Topics) != 1 || len(mresp.Topics[0].Partitions) != 1 {
		return 0, errors.New("no metadata for bench")
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = 5000
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "bench", mresp.Topics[0].TopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = offset, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	// A just-started node answers KAFKA_STORAGE_ERROR (retriable) until
	// it has read the remote segments' metadata: such an answer reads
	// nothing from the store, and the next try is the one timed.
	for {
		start := time.Now()
		resp, err := req.RequestWith(ctx, cl)
		took := time.Since(start)
		if err != nil {
			return 0, err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return 0, err
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); errors.Is(err, kerr.KafkaStorageError) {
			select {
			case <-ctx.Done():
				return 0, err
			case <-time.After(100 * time.Millisecond):
				continue
			}
		} else if err != nil {
			return 0, err
		}
		if len(p.RecordBatches) == 0 {
			return 0, errors.New("an empty answer")
		}
		return took, nil
	}
}

// readRange consumes bench-0 from offset 0 up to end and returns MB/s of
// record values and the bytes read.
func readRange(ctx context.Context, addr string, end int64) (float64, int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"bench": {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxBytes(8<<20), kgo.FetchMaxPartitionBytes(8<<20))
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	var bytes int64
	start := time.Now()
	for next := int64(0); next < end; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return 0, 0, err
		}
		for _, rec := range fs.Records() {
			if rec.Offset != next {
				return 0, 0, fmt.Errorf("offset %d read, %d expected", rec.Offset, next)
			}
			next++
			if rec.Offset < end {
				bytes += int64(len(rec.Value))
			}
		}
	}
	return float64(bytes) / 1e6 / time.Since(start).Seconds(), bytes, nil
}
