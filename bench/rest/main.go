// Command rest measures the REST Proxy's v3 streaming produce against the
// native produce path, side by side on one broker: the same 1 KiB JSON
// records (acks=all) produced by franz-go straight to the broker, and
// streamed over HTTP to the embedded REST Proxy (one report back per
// record), alternating the two run by run. It prints records/s for each,
// the REST/native ratio paired run by run, and the medians.
//
//	go run ./bench/rest               # 3 runs of 300,000 records each way
//	go run ./bench/rest -smoke        # tiny, once: checks it still works
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

var (
	records = flag.Int("records", 300_000, "records per run and path")
	runs    = flag.Int("runs", 3, "runs per path")
	streams = flag.Int("streams", 4, "concurrent streaming requests (and the native path's producer is one client)")
	parts   = flag.Int("partitions", 4, "partitions of each run's topic")
	smoke   = flag.Bool("smoke", false, "tiny, one run: checks the benchmark works")
)

func main() {
	flag.Parse()
	if *smoke {
		*records, *runs = 2_000, 1
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench/rest:", err)
		os.Exit(1)
	}
}

// value is a 1 KiB JSON object (compacted, as the proxy stores it) whose
// payload is random base64 text, so that compression does not shrink the
// native path's batches to nothing.
func value() []byte {
	raw := make([]byte, 1024)
	rand.Read(raw)
	text := base64.StdEncoding.EncodeToString(raw)[:1024-len(`{"payload":""}`)]
	v := []byte(`{"payload":"` + text + `"}`)
	if len(v) != 1024 {
		panic("value is not 1 KiB")
	}
	return v
}

func run() error {
	dir, err := os.MkdirTemp("", "vltava-bench-rest")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := os.Getenv("VLTAVA_BIN")
	if bin == "" {
		bin = filepath.Join(dir, "vltava")
		build := exec.Command("go", "build", "-o", bin, "./cmd/vltava")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building vltava: %w", err)
		}
	}
	kafkaAddr, err := freeAddr()
	if err != nil {
		return err
	}
	restAddr, err := freeAddr()
	if err != nil {
		return err
	}
	var out bytes.Buffer
	srv := exec.Command(bin, "server", "--override", "listeners=PLAINTEXT://"+kafkaAddr,
		"--override", "log.dirs="+filepath.Join(dir, "data"), "--override", "admin.listeners=",
		"--override", "rest.listeners=http://"+restAddr, "--override", "schema.registry.listeners=", "--override", "console.listeners=", "--log-level", "warn")
	srv.Stdout, srv.Stderr = &out, &out
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		srv.Wait()
	}()
	base := "http://" + restAddr
	cluster, err := waitCluster(base)
	if err != nil {
		return fmt.Errorf("%w\n%s", err, out.String())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.MaxBufferedRecords(100_000), kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	val := value()

	var native, rest, ratios []float64
	for i := 0; i < *runs; i++ {
		for _, path := range []string{"native", "rest"} {
			topic := fmt.Sprintf("bench-%s-%d", path, i)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			if _, err := adm.CreateTopic(ctx, int32(*parts), 1, nil, topic); err != nil {
				cancel()
				return err
			}
			var rate float64
			if path == "native" {
				rate, err = produceNative(ctx, cl, topic, val)
			} else {
				rate, err = produceREST(ctx, base, cluster, topic, val)
			}
			cancel()
			if err != nil {
				return fmt.Errorf("%s run %d: %w", path, i, err)
			}
			if path == "native" {
				native = append(native, rate)
			} else {
				rest = append(rest, rate)
				ratios = append(ratios, rate/native[len(native)-1])
			}
			fmt.Fprintf(os.Stderr, "run %d %-6s %10.0f records/s\n", i+1, path, rate)
		}
	}
	fmt.Printf("## REST Proxy v3 streaming produce vs native produce (1 KiB JSON, acks=all, %d partitions, %d records per run, %d streams)\n\n", *parts, *records, *streams)
	fmt.Printf("| path | records/s median (min–max) |\n| --- | --- |\n")
	fmt.Printf("| native (franz-go → broker) | %.0f (%.0f–%.0f) |\n", median(native), slices.Min(native), slices.Max(native))
	fmt.Printf("| REST v3 streaming (HTTP → proxy → broker) | %.0f (%.0f–%.0f) |\n", median(rest), slices.Min(rest), slices.Max(rest))
	fmt.Printf("\nREST/native ratio, paired run by run: median %.2f (%.2f–%.2f)\n", median(ratios), slices.Min(ratios), slices.Max(ratios))
	return nil
}

func freeAddr() (string, error) {
	p, err := freeport.Next()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", p), nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// waitCluster waits for the proxy and returns the cluster id.
func waitCluster(base string) (string, error) {
	var id string
	err := poll.Err(60*time.Second, func() error {
		resp, err := http.Get(base + "/v3/clusters")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var body struct {
			Data []struct {
				ClusterID string `json:"cluster_id"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Data) != 1 {
			return fmt.Errorf("GET /v3/clusters: %v %+v", err, body)
		}
		id = body.Data[0].ClusterID
		return nil
	})
	return id, err
}

// produceNative produces the records with franz-go and waits for every
// acknowledgement.
func produceNative(ctx context.Context, cl *kgo.Client, topic string, val []byte) (float64, error) {
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for i := 0; i < *records; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: val}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	elapsed := time.Since(start)
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(*records) / elapsed.Seconds(), nil
}

// produceREST streams the records over *streams concurrent requests and
// counts the reports: each must be a success.
func produceREST(ctx context.Context, base, cluster, topic string, val []byte) (float64, error) {
	line := append(append([]byte(`{"value":{"type":"JSON","data":`), val...), "}}"...)
	url := base + "/v3/clusters/" + cluster + "/topics/" + topic + "/records"
	per := *records / *streams
	errs := make(chan error, *streams)
	start := time.Now()
	for s := 0; s < *streams; s++ {
		n := per
		if s == 0 {
			n += *records - per**streams
		}
		go func() { errs <- stream(ctx, url, line, n) }()
	}
	for s := 0; s < *streams; s++ {
		if err := <-errs; err != nil {
			return 0, err
		}
	}
	return float64(*records) / time.Since(start).Seconds(), nil
}

func stream(ctx context.Context, url string, line []byte, n int) error {
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriterSize(pw, 256<<10)
		for i := 0; i < n; i++ {
			bw.Write(line)
		}
		pw.CloseWithError(bw.Flush())
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, pr)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	got := 0
	for sc.Scan() {
		if !bytes.HasPrefix(sc.Bytes(), []byte(`{"error_code":200,`)) {
			return fmt.Errorf("report %d: %s", got, sc.Bytes())
		}
		got++
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("%d reports for %d records", got, n)
	}
	return nil
}
