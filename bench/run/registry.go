package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/registry"
)

// Names of the schema registry measurements, matched by -only like the
// scenarios.
const (
	registryLookupName     = "schema registry: GET /schemas/ids/{id}, 100 schemas"
	registryValidationName = "schema validation on vs off: produce 1KiB acks=1 p=1"
)

// registrySection measures the embedded schema registry
// (docs/PERFORMANCE.md): the latency of schema lookups by id as an HTTP
// client on loopback sees them (the bound: 50 µs at p99, served
// from memory), and produce to a topic with
// confluent.value.schema.validation=true against the same topic with the
// check off, in pairs whose order alternates, each run on a fresh node.
// It writes its rows through w and returns the number of failed runs.
func registrySection(e env, nruns int, w func(string, ...any)) int {
	failed := 0
	if *only == "" || strings.Contains(registryLookupName, *only) {
		lookups := 50_000
		if *smoke {
			lookups = 500
		}
		w("\n## Schema registry (%d lookup run(s))\n\n", nruns)
		w("Each run times the registry, then a plain net/http server in a process of its own answering the same bytes for the same paths (the floor of an HTTP lookup on this machine), then the registry's handler and a plain handler called in the benchmark process, without the network (the registry's own time).\n\n")
		w("| measurement | lookups | p50 µs | p99 µs | p99.9 µs | max µs | lookups/s |\n|---|---|---|---|---|---|---|\n")
		for i := 0; i < nruns; i++ {
			r, floor, rIn, floorIn, err := measureRegistryLookups(e, 100, lookups)
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench: %s run %d: FAILED: %v\n", registryLookupName, i+1, err)
				failed++
				w("| %s | failed (%v) | | | | | |\n", registryLookupName, err)
				continue
			}
			for _, x := range []struct {
				name string
				r    lookupResult
			}{{registryLookupName, r}, {"plain net/http, the same answers", floor},
				{"the registry's handler in process (no network)", rIn}, {"a plain handler in process, the same answers", floorIn}} {
				w("| %s | %d | %.1f | %.1f | %.1f | %.1f | %.0f |\n", x.name, lookups,
					x.r.quantile(0.50), x.r.quantile(0.99), x.r.quantile(0.999), x.r.quantile(1), x.r.perSec)
			}
		}
	}
	if *only == "" || strings.Contains(registryValidationName, *only) {
		records := int64(500_000)
		if *smoke {
			records = 5_000
		}
		w("\n## Broker-side schema validation cost (%d pair(s), order alternating)\n\n", nruns)
		w("| measurement | validation on | validation off | on/off (paired median) | CPU µs/rec on | CPU µs/rec off | CPU on/off (paired median) |\n|---|---|---|---|---|---|---|\n")
		var on, off []measurement
		for i := 0; i < nruns; i++ {
			order := []bool{true, false}
			if i%2 == 1 {
				order = []bool{false, true}
			}
			for _, enabled := range order {
				m := measureValidatedProduce(e, enabled, records, i)
				if !m.ok {
					failed++
				}
				if enabled {
					on = append(on, m)
				} else {
					off = append(off, m)
				}
			}
		}
		var tput, cpu []float64
		for i := range on {
			if on[i].ok && off[i].ok && off[i].recPerSec > 0 && off[i].cpuMicrosPerRecord() > 0 {
				tput = append(tput, on[i].recPerSec/off[i].recPerSec)
				cpu = append(cpu, on[i].cpuMicrosPerRecord()/off[i].cpuMicrosPerRecord())
			}
		}
		w("| %s | %s | %s | %.3f | %.3f | %.3f | %.3f |\n", registryValidationName, recRate(on), recRate(off), medianOr0(tput),
			medianOr0(cpuPerRec(on)), medianOr0(cpuPerRec(off)), medianOr0(cpu))
		w("\nThe issue's bound: validation on costs at most 10 %% of throughput (on/off ≥ 0.90).\n")
	}
	return failed
}

// registryNode starts a node serving its schema registry on a free port
// and waits until the registry has read _schemas and answers.
func registryNode(e env, name string, extra ...string) (*broker, string, func(), error) {
	dir, err := os.MkdirTemp(e.base, name+"-")
	if err != nil {
		return nil, "", nil, err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", freePort())
	// The override comes after startBrokerArgs' schema.registry.listeners=
	// and wins.
	b, _, err := startBroker(e, "vltava", dir, freePort(), append([]string{"num.partitions=1", "schema.registry.listeners=" + url}, extra...)...)
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", nil, err
	}
	cleanup := func() {
		b.stop()
		os.RemoveAll(dir)
	}
	cl := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := cl.Get(url + "/subjects")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return b, url, cleanup, nil
			}
			err = errors.New(resp.Status)
		}
		if time.Now().After(deadline) {
			cleanup()
			return nil, "", nil, fmt.Errorf("the schema registry at %s did not serve: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// registerAvro registers an Avro schema under subject and returns its id.
func registerAvro(cl *http.Client, url, subject, schema string) (int, error) {
	body, _ := json.Marshal(map[string]string{"schema": schema})
	req, err := http.NewRequest(http.MethodPost, url+"/subjects/"+subject+"/versions", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	resp, err := cl.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("register %s: %d %s", subject, resp.StatusCode, b)
	}
	var r struct {
		ID int `json:"id"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, err
	}
	return r.ID, nil
}

// lookupResult is the latencies (µs) of one lookup run.
type lookupResult struct {
	us     []float64 // sorted
	perSec float64
}

func (r lookupResult) quantile(q float64) float64 {
	if len(r.us) == 0 {
		return 0
	}
	i := min(int(q*float64(len(r.us))), len(r.us)-1)
	return r.us[i]
}

// measureRegistryLookups registers schemas Avro schemas and times n
// lookups by id, round-robin over them, from one keep-alive client (after
// a pass over every id to warm up).
func measureRegistryLookups(e env, schemas, n int) (reg, floor, regIn, floorIn lookupResult, err error) {
	b, url, cleanup, err := registryNode(e, "registry-lookups")
	if err != nil {
		return reg, floor, regIn, floorIn, err
	}
	defer cleanup()
	cl := &http.Client{Timeout: 10 * time.Second}
	ids := make([]int, 0, schemas)
	for i := range schemas {
		id, err := registerAvro(cl, url, fmt.Sprintf("bench-%d-value", i),
			fmt.Sprintf(`{"type":"record","name":"R%d","fields":[{"name":"f","type":"long"}]}`, i))
		if err != nil {
			return reg, floor, regIn, floorIn, err
		}
		ids = append(ids, id)
	}
	// The registry's answers, kept for the plain server.
	answers := map[string][]byte{}
	get := func(base string, id int) error {
		path := fmt.Sprintf("/schemas/ids/%d", id)
		resp, err := cl.Get(base + path)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		if base == url {
			answers[path] = body
		}
		return err
	}
	for _, id := range ids {
		if err := get(url, id); err != nil {
			return reg, floor, regIn, floorIn, err
		}
	}
	// The plain server is another process, as the registry is: this
	// program again, told by the environment to serve the answers.
	file := filepath.Join(e.base, "registry-answers.json")
	raw, _ := json.Marshal(answers)
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		return reg, floor, regIn, floorIn, err
	}
	plainAddr := fmt.Sprintf("127.0.0.1:%d", freePort())
	self, err := os.Executable()
	if err != nil {
		return reg, floor, regIn, floorIn, err
	}
	plain := exec.Command(self)
	plain.Env = append(os.Environ(), plainHTTPEnv+"="+plainAddr+","+file)
	plain.Stderr = os.Stderr
	if err := plain.Start(); err != nil {
		return reg, floor, regIn, floorIn, err
	}
	defer func() { plain.Process.Kill(); plain.Wait() }()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", plainAddr, time.Second); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			return reg, floor, regIn, floorIn, fmt.Errorf("the plain HTTP server did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	run := func(base string) (lookupResult, error) {
		r := lookupResult{us: make([]float64, 0, n)}
		start := time.Now()
		for i := range n {
			t0 := time.Now()
			if err := get(base, ids[i%len(ids)]); err != nil {
				return r, err
			}
			r.us = append(r.us, float64(time.Since(t0).Nanoseconds())/1e3)
		}
		r.perSec = float64(n) / time.Since(start).Seconds()
		slices.Sort(r.us)
		return r, nil
	}
	if reg, err = run(url); err != nil {
		return reg, floor, regIn, floorIn, err
	}
	if floor, err = run("http://" + plainAddr); err != nil {
		return reg, floor, regIn, floorIn, err
	}

	// The registry's own time, in this process without the network: its
	// handler over a state read from the node's _schemas, beside a plain
	// handler answering the same bytes from a map.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	state := registry.NewState()
	store, err := registry.OpenStore(ctx, registry.StoreConfig{Client: []kgo.Opt{kgo.SeedBrokers(b.addr)}, ReplicationFactor: 1}, state)
	if err != nil {
		return reg, floor, regIn, floorIn, err
	}
	defer store.Close()
	handler := registry.NewHandler(registry.NewService(state, store, "BACKWARD"), registry.HandlerOptions{})
	plainHandler := answersHandler(answers)
	inProcess := func(h http.Handler) (lookupResult, error) {
		r := lookupResult{us: make([]float64, 0, n)}
		reqs := make([]*http.Request, len(ids))
		for i, id := range ids {
			reqs[i] = httptest.NewRequest(http.MethodGet, fmt.Sprintf("/schemas/ids/%d", id), nil)
		}
		start := time.Now()
		for i := range n {
			req := reqs[i%len(reqs)]
			w := httptest.NewRecorder()
			t0 := time.Now()
			h.ServeHTTP(w, req)
			r.us = append(r.us, float64(time.Since(t0).Nanoseconds())/1e3)
			if w.Code != http.StatusOK || !bytes.Equal(bytes.TrimSpace(w.Body.Bytes()), bytes.TrimSpace(answers[req.URL.Path])) {
				return r, fmt.Errorf("in process, GET %s: %d %q", req.URL.Path, w.Code, w.Body.String())
			}
		}
		r.perSec = float64(n) / time.Since(start).Seconds()
		slices.Sort(r.us)
		return r, nil
	}
	if regIn, err = inProcess(handler); err != nil {
		return reg, floor, regIn, floorIn, err
	}
	floorIn, err = inProcess(plainHandler)
	return reg, floor, regIn, floorIn, err
}

// plainHTTPEnv, set to "addr,file", makes this program a plain net/http
// server of the JSON map path → body in file: the floor the registry's
// lookups are measured against.
const plainHTTPEnv = "VLTAVA_BENCH_PLAIN_HTTP"

// servePlainHTTP runs that server when the environment asks for it, and
// never returns then.
func servePlainHTTP() {
	spec := os.Getenv(plainHTTPEnv)
	if spec == "" {
		return
	}
	addr, file, _ := strings.Cut(spec, ",")
	raw, err := os.ReadFile(file)
	var answers map[string][]byte
	if err == nil {
		err = json.Unmarshal(raw, &answers)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: plain HTTP server:", err)
		os.Exit(1)
	}
	err = http.ListenAndServe(addr, answersHandler(answers))
	fmt.Fprintln(os.Stderr, "bench: plain HTTP server:", err)
	os.Exit(1)
}

// measureValidatedProduce is one produce run of 1 KiB values in the
// registry's wire format (a registered id, then the payload) to a fresh
// node's topic, with confluent.value.schema.validation as given: the same
// bytes either way, so the difference is the broker's check.
func measureValidatedProduce(e env, enabled bool, records int64, i int) (m measurement) {
	defer func() {
		if *verbose || !m.ok {
			fmt.Fprintf(os.Stderr, "bench: %s validation=%v run %d: ok=%v %s (%.0f rec/s, %.2fs cpu)\n",
				registryValidationName, enabled, i+1, m.ok, m.err, m.recPerSec, m.cpuSeconds)
		}
	}()
	b, url, cleanup, err := registryNode(e, "registry-validation")
	if err != nil {
		return measurement{err: err.Error()}
	}
	defer cleanup()
	const topic = "validated"
	id, err := registerAvro(&http.Client{Timeout: 10 * time.Second}, url, topic+"-value", `{"type":"record","name":"V","fields":[{"name":"b","type":"bytes"}]}`)
	if err != nil {
		return measurement{err: err.Error()}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.DefaultProduceTopic(topic), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		return measurement{err: err.Error()}
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{
		"confluent.value.schema.validation": kadm.StringPtr(fmt.Sprint(enabled))}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return measurement{err: "create topic: " + err.Error()}
	}
	if err := waitLeader(ctx, kadm.NewClient(cl), topic); err != nil {
		return measurement{err: err.Error()}
	}
	// Magic byte 0, the id, then an Avro record of one bytes field: its
	// length as a zigzag varint and the bytes, 1 KiB in all.
	value := binary.BigEndian.AppendUint32([]byte{0}, uint32(id))
	body := 1024 - len(value) - 2
	value = binary.AppendVarint(value, int64(body))
	value = append(value, bytes.Repeat([]byte{'v'}, 1024-len(value))...)

	cpu0 := b.cpuSeconds()
	start := time.Now()
	var failures atomic.Int64
	var firstErr atomic.Value
	for range records {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil && failures.Add(1) == 1 {
				firstErr.Store(err.Error())
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return measurement{err: err.Error()}
	}
	took := time.Since(start)
	if n := failures.Load(); n > 0 {
		return measurement{err: fmt.Sprintf("%d records refused, first: %v", n, firstErr.Load())}
	}
	m = measurement{ok: true, records: records, recPerSec: float64(records) / took.Seconds(),
		mbPerSec: float64(records) * 1024 / took.Seconds() / (1 << 20), cpuSeconds: b.cpuSeconds() - cpu0}
	return m
}

// waitLeader polls metadata until topic's partition 0 has a leader.
func waitLeader(ctx context.Context, adm *kadm.Client, topic string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		td, err := adm.ListTopics(ctx, topic)
		if err == nil {
			if t, ok := td[topic]; ok && t.Err == nil {
				if p, ok := t.Partitions[0]; ok && p.Err == nil && p.Leader >= 0 {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s has no leader after 30s (%v)", topic, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// answersHandler serves the map path → body, the plain floor of a lookup.
func answersHandler(answers map[string][]byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := answers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		w.Write(body)
	})
}
