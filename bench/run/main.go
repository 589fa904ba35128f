// Command run is the side-by-side benchmark: it runs `vltava perf`
// scenarios against Vltava and against franz-go's kfake (bench/kfake),
// alternating the two run by run (A, B, A, B, …), each run on a fresh broker
// process, and prints a markdown report: medians with min–max, the
// Vltava/kfake ratio paired run by run, and for every run the broker's CPU
// time (utime+stime from /proc), CPU per record and peak RSS — on a 2-core
// machine the client often saturates first, and throughput alone hides what
// the broker costs. The machine's own limits (bench/limits) head the report.
//
//	go run ./bench/run            # the full suite (make bench)
//	go run ./bench/run -smoke     # a few seconds per scenario (make bench-smoke)
//	go run ./bench/run -only produce-1k
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vltava/vltava/internal/testing/freeport"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	runs    = flag.Int("runs", 3, "runs per scenario and broker")
	smoke   = flag.Bool("smoke", false, "tiny scenarios, one run each: checks the suite works")
	only    = flag.String("only", "", "run only scenarios whose name contains this")
	out     = flag.String("out", "", "also write the report to this file")
	dataDir = flag.String("data-dir", "", "where brokers keep data (default: a temp dir; use a real disk)")
	verbose = flag.Bool("v", false, "log every run")
	cpuProf = flag.String("cpuprofile", "", "write a CPU profile of the benchmark process (its in-process clients and Streams applications; brokers are separate processes) to this file")
)

func main() {
	servePlainHTTP() // registry.go: the floor server, when run as one
	flag.Parse()
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: -cpuprofile:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// scenario is one measured workload.
type scenario struct {
	name        string
	kind        string // produce, consume, e2e, partitions, restart
	recordSize  int
	records     int64
	acks        string
	compression string
	partitions  int
	throughput  int // e2e target records/s
	duration    time.Duration
	vltavaOnly  bool
	logBytes    int64 // restart: log size before the kill
}

func scenarios() []scenario {
	var ss []scenario
	for _, size := range []int{100, 1024} {
		for _, acks := range []string{"1", "all"} {
			for _, codec := range []string{"none", "lz4"} {
				for _, parts := range []int{1, 8} {
					n := int64(2_000_000)
					if size == 1024 {
						n = 500_000
					}
					ss = append(ss, scenario{
						name: fmt.Sprintf("produce %s acks=%s %s p=%d", sizeName(size), acks, codec, parts),
						kind: "produce", recordSize: size, records: n, acks: acks, compression: codec, partitions: parts,
					})
				}
			}
		}
	}
	ss = append(ss,
		scenario{name: "consume 1KiB page cache", kind: "consume", recordSize: 1024, records: 1_000_000, partitions: 1},
		scenario{name: "e2e 1KiB @10k/s", kind: "e2e", recordSize: 1024, throughput: 10_000, duration: 15 * time.Second, partitions: 1},
		scenario{name: "1000 partitions", kind: "partitions", recordSize: 1024, records: 300_000, partitions: 1000},
		scenario{name: "10000 partitions", kind: "partitions", recordSize: 1024, records: 100_000, partitions: 10_000, vltavaOnly: true},
		scenario{name: "restart after SIGKILL, 2 GiB log", kind: "restart", recordSize: 1024, logBytes: 2 << 30, partitions: 8, vltavaOnly: true},
		scenario{name: "3 nodes, rf=3 acks=all 1KiB p=3", kind: "cluster3", recordSize: 1024, records: 300_000, acks: "all", compression: "none", partitions: 3},
		// producer_byte_rate=1 MiB/s: 40 s of records after a warm-up that
		// spends the quota window's initial allowance (quota.go).
		scenario{name: "produce 1KiB quota 1MiB/s", kind: "quota", recordSize: 1024, records: 40_960, acks: "1", compression: "none", partitions: 1, vltavaOnly: true},
	)
	ss = append(ss, txnScenarios()...)     // txn.go
	ss = append(ss, streamsScenarios()...) // streams.go
	return ss
}

func (s scenario) shrink() scenario {
	s.records = max(s.records/100, 2000)
	s.duration = 2 * time.Second
	s.logBytes = 64 << 20
	if s.partitions > 100 {
		s.partitions = 100
	}
	return s
}

func sizeName(n int) string {
	if n >= 1024 {
		return fmt.Sprintf("%dKiB", n/1024)
	}
	return fmt.Sprintf("%dB", n)
}

// measurement is one run on one broker.
type measurement struct {
	ok         bool
	err        string
	records    int64
	recPerSec  float64
	mbPerSec   float64
	latency    map[string]float64 // p50, p99, p99_9, max (ms)
	cpuSeconds float64            // broker utime+stime during the measured part
	peakRSSMiB float64
	seconds    float64 // scenario-specific wall time (creation, start-up)
	extra      map[string]float64
	gcPauses   []float64 // stop-the-world pauses (ms) during the measured part, from gctrace
}

func (m measurement) cpuMicrosPerRecord() float64 {
	if m.records == 0 {
		return 0
	}
	return m.cpuSeconds * 1e6 / float64(m.records)
}

type env struct {
	vltava, kfake string // binaries
	base          string // data root
}

func run() error {
	tmp, err := os.MkdirTemp(*dataDir, "vltava-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	e := env{vltava: filepath.Join(tmp, "vltava"), kfake: filepath.Join(tmp, "kfake"), base: tmp}
	for bin, pkg := range map[string]string{e.vltava: "./cmd/vltava", e.kfake: "./bench/kfake"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", pkg, err, out)
		}
	}

	var report bytes.Buffer
	w := func(format string, a ...any) {
		fmt.Fprintf(&report, format, a...)
		fmt.Fprintf(os.Stdout, format, a...)
	}
	w("# Benchmark run %s\n\n", time.Now().UTC().Format(time.RFC3339))
	w("Machine: %d cores, %s. Command: `go run ./bench/run %s`.\n\n", numCPU(), memTotal(), strings.Join(os.Args[1:], " "))

	limits, err := exec.Command("go", "run", "./bench/limits", "-dir", tmp, "-bytes", strconv.Itoa(256<<20)).Output()
	if err != nil {
		return fmt.Errorf("bench/limits: %w", err)
	}
	w("## Machine limits\n\n```\n%s```\n\n", limits)

	nruns := *runs
	if *smoke {
		nruns = 1
	}
	w("## Scenarios (%d run(s) each, Vltava and kfake alternating)\n\n", nruns)
	w("| scenario | Vltava | kfake | ratio V/k (paired) | CPU µs/rec V | CPU µs/rec k | peak RSS MiB V | peak RSS MiB k | GC pauses V | GC pauses k | notes |\n")
	w("|---|---|---|---|---|---|---|---|---|---|---|\n")
	failed := 0
	for _, s := range scenarios() {
		if *only != "" && !strings.Contains(s.name, *only) {
			continue
		}
		if *smoke {
			s = s.shrink()
		}
		var vs, ks []measurement
		for i := 0; i < nruns; i++ {
			vs = append(vs, measure(e, "vltava", s, i))
			if !s.vltavaOnly {
				ks = append(ks, measure(e, "kfake", s, i))
			}
		}
		for _, m := range append(slices.Clone(vs), ks...) {
			if !m.ok {
				failed++
			}
		}
		w("%s\n", row(s, vs, ks))
	}
	w("\nThroughput cells: median (min–max) records/s; latency cells: p50/p99/p99.9 ms; partitions rows: topic creation seconds and records/s; restart rows: seconds from exec to serving.\n")
	failed += metricsSection(e, nruns, w)  // metrics.go
	failed += mirrorSection(e, nruns, w)   // mirror.go
	failed += tieredSection(e, nruns, w)   // tiered.go
	failed += registrySection(e, nruns, w) // registry.go
	if *out != "" {
		if err := os.WriteFile(*out, report.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d run(s) failed", failed)
	}
	return nil
}

// broker is a broker process under measurement.
type broker struct {
	cmd  *exec.Cmd
	addr string
	dir  string
	impl string
	log  *syncBuffer
}

// syncBuffer is the broker's output, written by the process-copying
// goroutine and read while the broker runs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// gcPauses parses the stop-the-world pauses of the gctrace lines written
// after offset: in "gc N @t s P%: a+b+c ms clock, ...", a and c are the two
// pauses (sweep termination, mark termination).
func (b *syncBuffer) gcPauses(offset int) []float64 {
	b.mu.Lock()
	text := b.buf.String()[offset:]
	b.mu.Unlock()
	var out []float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "gc ") {
			continue
		}
		_, rest, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		clock, _, ok := strings.Cut(rest, " ms clock")
		if !ok {
			continue
		}
		parts := strings.Split(clock, "+")
		if len(parts) != 3 {
			continue
		}
		a, err1 := strconv.ParseFloat(parts[0], 64)
		c, err2 := strconv.ParseFloat(parts[2], 64)
		if err1 == nil && err2 == nil {
			out = append(out, a+c)
		}
	}
	return out
}

func startBroker(e env, impl, dir string, port int, extra ...string) (*broker, time.Duration, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if impl == "vltava" {
		return startBrokerArgs(e, dir, addr, append([]string{"listeners=PLAINTEXT://" + addr}, extra...))
	}
	args := []string{"-addr", addr, "-log-level", "none"}
	for _, x := range extra {
		if n, ok := strings.CutPrefix(x, "brokers="); ok {
			args = append(args, "-brokers", n)
		}
	}
	return launch(exec.Command(e.kfake, args...), impl, addr, dir)
}

// startBrokerArgs starts a Vltava node with the given config overrides;
// addr is where it serves clients.
func startBrokerArgs(e env, dir, addr string, overrides []string) (*broker, time.Duration, error) {
	// No admin listener unless the overrides (which come after) set one.
	args := []string{"server", "--override", "log.dirs=" + dir, "--override", "admin.listeners=", "--override", "rest.listeners=", "--override", "schema.registry.listeners=", "--override", "console.listeners=", "--log-level", "warn"}
	for _, x := range overrides {
		args = append(args, "--override", x)
	}
	return launch(exec.Command(e.vltava, args...), "vltava", addr, dir)
}

// launch starts a broker process and waits until it serves.
func launch(cmd *exec.Cmd, impl, addr, dir string) (*broker, time.Duration, error) {
	b := &broker{cmd: cmd, addr: addr, dir: dir, impl: impl, log: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = b.log, b.log
	// Both brokers are Go programs: gctrace reports their GC pauses.
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "GODEBUG=gctrace=1")
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	// Ready means serving: a Metadata request answered (a listening
	// socket is not enough; a broker gates clients until it has recovered
	// and registered).
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		if answersMetadata(addr) {
			return b, time.Since(start), nil
		}
		if cmd.ProcessState != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.kill()
	return nil, 0, fmt.Errorf("%s did not start: %s", impl, b.log.String())
}

// answersMetadata reports whether a broker answers a Metadata request.
func answersMetadata(addr string) bool {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTimeout(200*time.Millisecond), kgo.RequestRetries(0))
	if err != nil {
		return false
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	return err == nil
}

func (b *broker) kill() {
	b.cmd.Process.Signal(syscall.SIGKILL)
	b.cmd.Wait()
}

func (b *broker) stop() {
	b.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		b.kill()
	}
}

// cpuSeconds is the process's utime+stime.
func (b *broker) cpuSeconds() float64 { return procCPUSeconds(b.cmd.Process.Pid) }

// procCPUSeconds is a process's utime+stime from /proc, 0 if unreadable.
func procCPUSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / clockTicks
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

func (b *broker) peakRSSMiB() float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", b.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// perf runs `vltava perf ...` against b and decodes its JSON report.
func perf(e env, b *broker, args ...string) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	full := append([]string{"perf"}, args...)
	full = append(full, "--json", "--bootstrap-server", b.addr)
	cmd := exec.CommandContext(ctx, e.vltava, full...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("vltava %s: %v: %s", strings.Join(full, " "), err, lastLine(stderr.String()))
	}
	var rep map[string]any
	if err := json.Unmarshal(outb, &rep); err != nil {
		return nil, fmt.Errorf("perf output %q: %w", outb, err)
	}
	return rep, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func num(m map[string]any, k string) float64 {
	v, _ := m[k].(float64)
	return v
}

func measure(e env, impl string, s scenario, i int) (m measurement) {
	if s.kind == "cluster3" {
		m = measureCluster(e, impl, s)
		if *verbose || !m.ok {
			fmt.Fprintf(os.Stderr, "bench: %s %s run %d: ok=%v %s (%.0f rec/s, %.2fs cpu)\n", s.name, impl, i+1, m.ok, m.err, m.recPerSec, m.cpuSeconds)
		}
		return m
	}
	dir, err := os.MkdirTemp(e.base, impl+"-")
	if err != nil {
		return measurement{err: err.Error()}
	}
	defer os.RemoveAll(dir)
	port := freePort()
	defer func() {
		if *verbose || !m.ok {
			status := "ok"
			if !m.ok {
				status = "FAILED: " + m.err
			}
			fmt.Fprintf(os.Stderr, "bench: %s %s run %d: %s (%.0f rec/s, %.2fs cpu)\n", s.name, impl, i+1, status, m.recPerSec, m.cpuSeconds)
		}
	}()
	extra := []string{"num.partitions=1"}
	if s.kind == "streams" {
		// The applications join their groups at once, and the admin
		// listener is not under test.
		extra = append(extra, "group.initial.rebalance.delay.ms=0", "admin.listeners=")
	}
	b, _, err := startBroker(e, impl, dir, port, extra...)
	if err != nil {
		return measurement{err: err.Error()}
	}
	defer func() {
		if b != nil {
			b.stop()
		}
	}()
	topic := "bench"
	common := []string{"--record-size", strconv.Itoa(s.recordSize)}
	fail := func(err error) measurement { return measurement{err: err.Error()} }

	switch s.kind {
	case "produce":
		log0 := b.log.Len()
		defer func() { m.gcPauses = b.log.gcPauses(log0) }()
		cpu0 := b.cpuSeconds()
		rep, err := perf(e, b, append([]string{"produce", topic, "--num-records", strconv.FormatInt(s.records, 10),
			"--acks", s.acks, "--compression", s.compression, "--partitions", strconv.Itoa(s.partitions)}, common...)...)
		if err != nil {
			return fail(err)
		}
		m = fromReport(rep)
		m.cpuSeconds = b.cpuSeconds() - cpu0
	case "consume":
		if _, err := perf(e, b, append([]string{"produce", topic, "--num-records", strconv.FormatInt(s.records, 10),
			"--acks", "1", "--partitions", strconv.Itoa(s.partitions)}, common...)...); err != nil {
			return fail(err)
		}
		log0 := b.log.Len()
		defer func() { m.gcPauses = b.log.gcPauses(log0) }()
		cpu0 := b.cpuSeconds()
		rep, err := perf(e, b, "consume", topic, "--num-records", strconv.FormatInt(s.records, 10))
		if err != nil {
			return fail(err)
		}
		m = fromReport(rep)
		m.cpuSeconds = b.cpuSeconds() - cpu0
	case "e2e":
		log0 := b.log.Len()
		defer func() { m.gcPauses = b.log.gcPauses(log0) }()
		cpu0 := b.cpuSeconds()
		rep, err := perf(e, b, append([]string{"e2e", topic, "--duration", s.duration.String(),
			"--throughput", strconv.Itoa(s.throughput)}, common...)...)
		if err != nil {
			return fail(err)
		}
		m = fromReport(rep)
		m.cpuSeconds = b.cpuSeconds() - cpu0
	case "partitions":
		start := time.Now()
		out, err := exec.Command(e.vltava, "topics", "create", topic, "--partitions", strconv.Itoa(s.partitions),
			"--bootstrap-server", b.addr).CombinedOutput()
		if err != nil {
			return fail(fmt.Errorf("topics create: %v: %s", err, out))
		}
		created := time.Since(start).Seconds()
		cpu0 := b.cpuSeconds()
		rep, err := perf(e, b, append([]string{"produce", topic, "--num-records", strconv.FormatInt(s.records, 10), "--acks", "1"}, common...)...)
		if err != nil {
			return fail(err)
		}
		m = fromReport(rep)
		m.cpuSeconds = b.cpuSeconds() - cpu0
		m.seconds = created
		if impl == "vltava" {
			// Start-up after a clean stop, with every partition on disk.
			m.peakRSSMiB = b.peakRSSMiB()
			b.stop()
			var startup time.Duration
			b, startup, err = startBroker(e, impl, dir, port)
			if err != nil {
				return fail(err)
			}
			m.extra = map[string]float64{"restart_s": startup.Seconds()}
			m.ok = true
			return m
		}
	case "quota":
		if m, err = measureQuota(e, b, s); err != nil {
			return fail(err)
		}
	case "txn":
		if m, err = measureTxn(b, s); err != nil {
			return fail(err)
		}
	case "streams":
		if m, err = measureStreams(b, s); err != nil {
			return fail(err)
		}
	case "restart":
		records := s.logBytes / int64(s.recordSize)
		if _, err := perf(e, b, append([]string{"produce", topic, "--num-records", strconv.FormatInt(records, 10),
			"--acks", "1", "--partitions", strconv.Itoa(s.partitions)}, common...)...); err != nil {
			return fail(err)
		}
		b.kill()
		var startup time.Duration
		b, startup, err = startBroker(e, impl, dir, port)
		if err != nil {
			return fail(err)
		}
		m = measurement{seconds: startup.Seconds(), records: records}
	}
	m.peakRSSMiB = b.peakRSSMiB()
	m.ok = true
	return m
}

func fromReport(rep map[string]any) measurement {
	m := measurement{
		records:   int64(num(rep, "records")),
		recPerSec: num(rep, "records_per_sec"),
		mbPerSec:  num(rep, "mb_per_sec"),
	}
	if lat, ok := rep["latency_ms"].(map[string]any); ok {
		m.latency = map[string]float64{}
		for k, v := range lat {
			m.latency[k], _ = v.(float64)
		}
	}
	return m
}

func row(s scenario, vs, ks []measurement) string {
	cell := func(ms []measurement) string {
		var vals []float64
		for _, m := range ms {
			if !m.ok {
				return "failed: " + m.err
			}
			switch s.kind {
			case "e2e":
				vals = append(vals, m.latency["p99"])
			case "restart":
				vals = append(vals, m.seconds)
			default:
				vals = append(vals, m.recPerSec)
			}
		}
		if len(vals) == 0 {
			return "n/a"
		}
		if s.kind == "e2e" {
			var p50, p99, p999 []float64
			for _, m := range ms {
				p50, p99, p999 = append(p50, m.latency["p50"]), append(p99, m.latency["p99"]), append(p999, m.latency["p99_9"])
			}
			return fmt.Sprintf("%.2f/%.2f/%.2f", median(p50), median(p99), median(p999))
		}
		if s.kind == "restart" {
			return fmt.Sprintf("%.2f s (%.2f–%.2f)", median(vals), slices.Min(vals), slices.Max(vals))
		}
		return fmt.Sprintf("%.0f (%.0f–%.0f)", median(vals), slices.Min(vals), slices.Max(vals))
	}
	ratio := "n/a"
	if len(ks) > 0 && len(vs) == len(ks) {
		var rs []float64
		for i := range vs {
			if !vs[i].ok || !ks[i].ok {
				rs = nil
				break
			}
			a, b := vs[i].recPerSec, ks[i].recPerSec
			if s.kind == "e2e" {
				a, b = vs[i].latency["p99"], ks[i].latency["p99"]
			}
			if b > 0 {
				rs = append(rs, a/b)
			}
		}
		if len(rs) > 0 {
			ratio = fmt.Sprintf("%.2f (%.2f–%.2f)", median(rs), slices.Min(rs), slices.Max(rs))
		}
	}
	stat := func(ms []measurement, f func(measurement) float64, format string) string {
		var vals []float64
		for _, m := range ms {
			if m.ok {
				vals = append(vals, f(m))
			}
		}
		if len(vals) == 0 {
			return "n/a"
		}
		return fmt.Sprintf(format, median(vals))
	}
	var notes []string
	if s.kind == "partitions" {
		notes = append(notes, "create s: V "+stat(vs, func(m measurement) float64 { return m.seconds }, "%.2f")+", k "+stat(ks, func(m measurement) float64 { return m.seconds }, "%.2f"))
		notes = append(notes, "V restart after clean stop: "+stat(vs, func(m measurement) float64 { return m.extra["restart_s"] }, "%.2f s"))
	}
	if s.kind == "e2e" {
		notes = append(notes, "cells are p50/p99/p99.9 ms; ratio is p99")
	}
	if s.kind == "txn" {
		notes = append(notes, txnNotes(s, vs, ks))
	}
	if s.kind == "streams" {
		notes = append(notes, streamsNotes(s, vs))
	}
	if s.kind == "quota" {
		notes = append(notes, "V MiB/s under a 1 MiB/s producer_byte_rate: "+stat(vs, func(m measurement) float64 { return m.mbPerSec }, "%.3f")+
			fmt.Sprintf(" (min %.3f, max %.3f)", minMax(vs, false), minMax(vs, true)))
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", s.name, cell(vs), cell(ks), ratio,
		stat(vs, measurement.cpuMicrosPerRecord, "%.2f"), stat(ks, measurement.cpuMicrosPerRecord, "%.2f"),
		stat(vs, func(m measurement) float64 { return m.peakRSSMiB }, "%.0f"), stat(ks, func(m measurement) float64 { return m.peakRSSMiB }, "%.0f"),
		pauses(vs), pauses(ks), strings.Join(notes, "; "))
}

// pauses summarizes the GC pauses of all runs: count, p99 and max in ms.
func pauses(ms []measurement) string {
	var all []float64
	for _, m := range ms {
		all = append(all, m.gcPauses...)
	}
	if len(all) == 0 {
		return "none"
	}
	slices.Sort(all)
	p99 := all[min(len(all)-1, int(float64(len(all))*0.99))]
	return fmt.Sprintf("%d: p99 %.2f, max %.2f ms", len(all), p99, all[len(all)-1])
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func freePort() int {
	p, err := freeport.Next()
	if err != nil {
		panic(err)
	}
	return p
}

func numCPU() int {
	n := 0
	data, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "processor") {
			n++
		}
	}
	return n
}

func memTotal() string {
	data, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return fmt.Sprintf("%.0f GiB RAM", kb/1024/1024)
		}
	}
	return "unknown RAM"
}

// measureCluster runs a produce scenario on three brokers: three Vltava
// nodes (each a broker and a quorum voter, topics replicated three ways,
// min.insync.replicas=2), or one kfake process with three brokers. CPU and
// peak RSS are summed over the processes.
func measureCluster(e env, impl string, s scenario) measurement {
	fail := func(err error) measurement { return measurement{err: err.Error()} }
	var procs []*broker
	defer func() {
		for _, b := range procs {
			b.stop()
		}
	}()
	if impl == "kfake" {
		dir, err := os.MkdirTemp(e.base, "kfake-")
		if err != nil {
			return fail(err)
		}
		defer os.RemoveAll(dir)
		b, _, err := startBroker(e, impl, dir, freePort(), "brokers=3")
		if err != nil {
			return fail(err)
		}
		procs = append(procs, b)
	} else {
		var bports, cports []int
		var voters []string
		for i := 1; i <= 3; i++ {
			bports, cports = append(bports, freePort()), append(cports, freePort())
			voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i, cports[i-1]))
		}
		type started struct {
			b   *broker
			err error
		}
		ch := make(chan started, 3)
		for i := 1; i <= 3; i++ {
			dir, err := os.MkdirTemp(e.base, "vltava-")
			if err != nil {
				return fail(err)
			}
			defer os.RemoveAll(dir)
			go func() {
				b, _, err := startBrokerArgs(e, dir, fmt.Sprintf("127.0.0.1:%d", bports[i-1]), []string{
					fmt.Sprintf("node.id=%d", i),
					fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", bports[i-1], cports[i-1]),
					"controller.quorum.voters=" + strings.Join(voters, ","),
					"controller.listener.names=CONTROLLER",
					"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
					"default.replication.factor=3", "min.insync.replicas=2", "offsets.topic.replication.factor=3",
				})
				ch <- started{b, err}
			}()
		}
		for range 3 {
			r := <-ch
			if r.err != nil {
				return fail(r.err)
			}
			procs = append(procs, r.b)
		}
	}
	cpu := func() float64 {
		var sum float64
		for _, b := range procs {
			sum += b.cpuSeconds()
		}
		return sum
	}
	cpu0 := cpu()
	rep, err := perf(e, procs[0], "produce", "bench", "--num-records", strconv.FormatInt(s.records, 10),
		"--acks", s.acks, "--compression", s.compression, "--partitions", strconv.Itoa(s.partitions),
		"--record-size", strconv.Itoa(s.recordSize))
	if err != nil {
		return fail(err)
	}
	m := fromReport(rep)
	m.cpuSeconds = cpu() - cpu0
	for _, b := range procs {
		m.peakRSSMiB += b.peakRSSMiB()
	}
	m.ok = true
	return m
}
