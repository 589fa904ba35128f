package cluster

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// debianPython is the system interpreter that sees the Debian package
// python3-confluent-kafka (librdkafka); a pyenv python3 earlier in PATH
// would not.
const debianPython = "/usr/bin/python3"

// requireConfluentKafka fails the test unless librdkafka's Python binding
// is importable: the suite's producers are part of what it checks.
func requireConfluentKafka(t testing.TB) {
	t.Helper()
	out, err := exec.Command(debianPython, "-c", "import confluent_kafka").CombinedOutput()
	if err != nil {
		t.Fatalf("%s cannot import confluent_kafka (install python3-confluent-kafka, `make deps`): %v: %s",
			debianPython, err, strings.TrimSpace(string(out)))
	}
}

// rdkafkaProducer runs python/rdkafka_producer.py: librdkafka's idempotent
// acks=all producer, writing the same kind of sequence as kgoProducer.
type rdkafkaProducer struct {
	l      *ledger
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *capturedOutput
	done   chan struct{} // closed when stdout has been read to the end
	mu     struct {
		sync.Mutex
		summary *rdkafkaSummary
		badLine string
	}
}

// rdkafkaLine is one line of the script's output.
type rdkafkaLine struct {
	Seq       *int64 `json:"seq"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Error     string `json:"error"`
	rdkafkaSummary
}

// rdkafkaSummary is the script's last line.
type rdkafkaSummary struct {
	Done      bool    `json:"done"`
	Fatal     *string `json:"fatal"`
	Unflushed int     `json:"unflushed"`
	Produced  int64   `json:"produced"`
}

// rdkafkaSecurity is how the librdkafka producer connects: its
// security.protocol, sasl.mechanism, sasl.username, sasl.password and
// ssl.ca.location (a PEM file); the zero value is PLAINTEXT, librdkafka's
// default.
type rdkafkaSecurity struct {
	Protocol, Mechanism, Username, Password, CALocation string
}

// args are the script's options for s: only what is set.
func (s rdkafkaSecurity) args() []string {
	var args []string
	for _, o := range []struct{ flag, value string }{
		{"--security-protocol", s.Protocol},
		{"--sasl-mechanism", s.Mechanism},
		{"--sasl-username", s.Username},
		{"--sasl-password", s.Password},
		{"--ssl-ca-location", s.CALocation},
	} {
		if o.value != "" {
			args = append(args, o.flag+"="+o.value)
		}
	}
	return args
}

func startRdkafkaProducer(t testing.TB, c *Cluster, name, topic string, partitions int32, interval time.Duration, sec rdkafkaSecurity) *rdkafkaProducer {
	t.Helper()
	requireConfluentKafka(t)
	script, err := filepath.Abs(filepath.Join("python", "rdkafka_producer.py"))
	if err != nil {
		t.Fatal(err)
	}
	p := &rdkafkaProducer{l: newLedger(name), stderr: &capturedOutput{}, done: make(chan struct{})}
	args := append([]string{script}, sec.args()...)
	args = append(args, c.BootstrapServers(), topic,
		strconv.Itoa(int(partitions)), name, strconv.Itoa(int(interval/time.Millisecond)))
	p.cmd = exec.Command(debianPython, args...)
	p.cmd.Stderr = p.stderr
	p.cmd.SysProcAttr = nodeProcAttr()
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", script, err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		if t.Failed() {
			t.Logf("librdkafka producer %s stderr (tail):\n%s", name, tailLines(p.stderr.String(), 60))
		}
	})
	go p.read(stdout)
	return p
}

func (p *rdkafkaProducer) read(stdout io.Reader) {
	defer close(p.done)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var ln rdkafkaLine
		if err := json.Unmarshal(sc.Bytes(), &ln); err != nil {
			p.mu.Lock()
			p.mu.badLine = sc.Text()
			p.mu.Unlock()
			continue
		}
		switch {
		case ln.Done:
			s := ln.rdkafkaSummary
			p.mu.Lock()
			p.mu.summary = &s
			p.mu.Unlock()
		case ln.Seq == nil:
			p.mu.Lock()
			p.mu.badLine = sc.Text()
			p.mu.Unlock()
		case ln.Error != "":
			p.l.fail(ln.Error)
		default:
			p.l.ack(ackedRecord{Seq: *ln.Seq, Partition: ln.Partition, Offset: ln.Offset})
		}
	}
}

func (p *rdkafkaProducer) Ledger() *ledger { return p.l }

// Stop closes the script's stdin (its signal to stop and flush) and waits
// for its summary.
func (p *rdkafkaProducer) Stop() error {
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(150 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	werr := p.cmd.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	if werr != nil {
		errs = append(errs, fmt.Errorf("exit: %w", werr))
	}
	if p.mu.badLine != "" {
		errs = append(errs, fmt.Errorf("unexpected output line %q", p.mu.badLine))
	}
	switch s := p.mu.summary; {
	case s == nil:
		errs = append(errs, errors.New("no summary line"))
	case s.Fatal != nil:
		errs = append(errs, fmt.Errorf("fatal producer error: %s", *s.Fatal))
	case s.Unflushed != 0:
		errs = append(errs, fmt.Errorf("%d records still unflushed after 120 s", s.Unflushed))
	}
	if err := errors.Join(errs...); err != nil {
		tail := tailLines(p.stderr.String(), 20)
		return fmt.Errorf("librdkafka producer %s: %w\nstderr tail:\n%s", p.l.name, err, tail)
	}
	return nil
}
