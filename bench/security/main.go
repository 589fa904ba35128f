// Command security measures what TLS and SASL cost: one Vltava broker with
// a PLAINTEXT, an SSL and a SASL_SSL (SCRAM-SHA-512) listener, and beside it
// three franz-go kfake processes (bench/kfake; one protocol each), and
// `vltava perf produce` / `perf consume` of 1 KiB records through each in
// turn (Vltava PLAINTEXT, SSL, SASL_SSL, then kfake's, and again), each run
// on a topic of its own, printing a markdown table of medians with min–max
// and the ratio to the same broker's PLAINTEXT; then the CPU each broker
// process and each perf client spent per MB moved (from /proc and the
// client's rusage), which other load on the machine barely moves. Under TLS the fetch path cannot use sendfile: file regions are
// read (pread) into pooled 64 KiB buffers and written through the TLS
// connection (internal/server/chunk.go), and this is what the consume
// column measures.
//
//	go run ./bench/security              # 3 runs of 500,000 records
//	go run ./bench/security -records 50000 -runs 1
//	go run ./bench/security -smoke       # tiny, once: checks it still works
package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/freeport"
)

var (
	runs    = flag.Int("runs", 3, "runs per listener")
	records = flag.Int64("records", 500_000, "records per run")
	size    = flag.Int("record-size", 1024, "record size in bytes")
	smoke   = flag.Bool("smoke", false, "tiny, one run: checks the benchmark works")
)

func main() {
	flag.Parse()
	if *smoke {
		*records, *runs = 2_000, 1
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench/security:", err)
		os.Exit(1)
	}
}

type listener struct {
	impl, name, addr, props string
	pid                     int // the broker process serving it
}

func run() error {
	dir, err := os.MkdirTemp("", "vltava-bench-security-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := os.Getenv("VLTAVA_BIN")
	if bin == "" {
		bin = filepath.Join(dir, "vltava")
		if out, err := exec.Command("go", "build", "-o", bin, "./cmd/vltava").CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	caPEM, keystore, certFile, keyFile, err := writeCerts(dir)
	if err != nil {
		return err
	}
	kfakeBin := filepath.Join(dir, "kfake")
	if out, err := exec.Command("go", "build", "-o", kfakeBin, "./bench/kfake").CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./bench/kfake: %v\n%s", err, out)
	}
	next := func() string {
		p, err := freeport.Next()
		if err != nil {
			panic(err)
		}
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	plainAddr, sslAddr, saslAddr := next(), next(), next()
	srv := exec.Command(bin, "server", "--override", "rest.listeners=", "--override", "schema.registry.listeners=", "--override", "console.listeners=",
		"--override", "listeners=PLAINTEXT://"+plainAddr+",SSL://"+sslAddr+",SASL_SSL://"+saslAddr,
		"--override", "inter.broker.listener.name=PLAINTEXT",
		"--override", "log.dirs="+filepath.Join(dir, "data"),
		"--override", "admin.listeners=",
		"--override", "ssl.keystore.type=PEM", "--override", "ssl.keystore.location="+keystore,
		"--override", "sasl.enabled.mechanisms=SCRAM-SHA-512",
		"--log-level", "warn")
	var srvOut bytes.Buffer
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(plainAddr))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bench", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bench-secret"}}); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("broker not ready: %s", srvOut.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			panic(err)
		}
		return p
	}
	trust := "ssl.truststore.type=PEM\nssl.truststore.location=" + caPEM + "\n"
	plainProps := write("plain.properties", "")
	sslProps := write("ssl.properties", "security.protocol=SSL\n"+trust)
	saslProps := write("sasl.properties", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="bench" password="bench-secret";`+"\n"+trust)
	ls := []listener{
		{"vltava", "PLAINTEXT", plainAddr, plainProps, srv.Process.Pid},
		{"vltava", "SSL", sslAddr, sslProps, srv.Process.Pid},
		{"vltava", "SASL_SSL", saslAddr, saslProps, srv.Process.Pid},
	}
	for _, k := range []struct {
		name, props string
		args        []string
	}{
		{"PLAINTEXT", plainProps, nil},
		{"SSL", sslProps, []string{"-tls-cert", certFile, "-tls-key", keyFile}},
		{"SASL_SSL", saslProps, []string{"-tls-cert", certFile, "-tls-key", keyFile,
			"-sasl-user", "bench", "-sasl-password", "bench-secret", "-sasl-mechanism", "SCRAM-SHA-512"}},
	} {
		addr := next()
		cmd := exec.Command(kfakeBin, append([]string{"-addr", addr}, k.args...)...)
		if err := cmd.Start(); err != nil {
			return err
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		if err := waitListening(addr); err != nil {
			return fmt.Errorf("kfake %s: %w", k.name, err)
		}
		ls = append(ls, listener{"kfake", k.name, addr, k.props, cmd.Process.Pid})
	}
	prod, cons := map[string][]float64{}, map[string][]float64{}
	// CPU milliseconds (user + system) per MB moved, of the broker process
	// and of the perf client: unlike MB/s, barely moved by other load on
	// the machine.
	prodCPU, consCPU := map[string][]float64{}, map[string][]float64{}
	prodCl, consCl := map[string][]float64{}, map[string][]float64{}
	mb := float64(*records) * float64(*size) / 1e6
	for r := 0; r < *runs; r++ {
		for _, l := range ls {
			key := l.impl + " " + l.name
			topic := fmt.Sprintf("bench-%s-%s-%d", l.impl, strings.ToLower(l.name), r)
			p, pc, pcl, err := perf(bin, l, "produce", topic, "--num-records", strconv.FormatInt(*records, 10),
				"--record-size", strconv.Itoa(*size), "--acks", "1", "--partitions", "1")
			if err != nil {
				return err
			}
			c, cc, ccl, err := perf(bin, l, "consume", topic, "--num-records", strconv.FormatInt(*records, 10))
			if err != nil {
				return err
			}
			prod[key] = append(prod[key], p)
			cons[key] = append(cons[key], c)
			prodCPU[key] = append(prodCPU[key], 1000*pc/mb)
			consCPU[key] = append(consCPU[key], 1000*cc/mb)
			prodCl[key] = append(prodCl[key], 1000*pcl/mb)
			consCl[key] = append(consCl[key], 1000*ccl/mb)
			fmt.Fprintf(os.Stderr, "run %d %-18s produce %.1f MB/s (broker %.2f, client %.2f CPU ms/MB) consume %.1f MB/s (broker %.2f, client %.2f CPU ms/MB)\n",
				r, key, p, 1000*pc/mb, 1000*pcl/mb, c, 1000*cc/mb, 1000*ccl/mb)
		}
	}
	fmt.Printf("%d × %d B records, acks=1, 1 partition, %d runs per listener (median, min–max)\n\n", *records, *size, *runs)
	fmt.Println("| broker | listener | produce MB/s | vs its PLAINTEXT | consume MB/s | vs its PLAINTEXT |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, l := range ls {
		key, base := l.impl+" "+l.name, l.impl+" PLAINTEXT"
		fmt.Printf("| %s | %s | %s | %.0f %% | %s | %.0f %% |\n", l.impl, l.name,
			spread(prod[key]), 100*median(prod[key])/median(prod[base]),
			spread(cons[key]), 100*median(cons[key])/median(cons[base]))
	}
	fmt.Println()
	fmt.Println("Broker CPU ms per MB moved (user + system; the client's beside it): PLAINTEXT's over this listener's is the throughput ratio a broker-CPU-bound run would reach.")
	fmt.Println()
	fmt.Println("| broker | listener | produce: broker CPU ms/MB | PLAINTEXT/this | client | consume: broker CPU ms/MB | PLAINTEXT/this | client |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, l := range ls {
		key, base := l.impl+" "+l.name, l.impl+" PLAINTEXT"
		fmt.Printf("| %s | %s | %s | %s | %.2f | %s | %s | %.2f |\n", l.impl, l.name,
			spreadf(prodCPU[key], 2), ratio(median(prodCPU[base]), median(prodCPU[key])), median(prodCl[key]),
			spreadf(consCPU[key], 2), ratio(median(consCPU[base]), median(consCPU[key])), median(consCl[key]))
	}
	return nil
}

// ratio is a/b as a percentage, "–" when either is too small to measure
// (under a clock tick per run).
func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f %%", 100*a/b)
}

// cpuSeconds is a process's user + system CPU time so far, from
// /proc/<pid>/stat (fields 14 and 15, in clock ticks of 1/100 s, the
// USER_HZ Linux reports on every architecture Go supports).
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is parenthesised and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	return (ut + st) / 100, nil
}

// perf runs one `vltava perf` command and returns its MB/s, the CPU
// seconds the broker used meanwhile and the client's.
func perf(bin string, l listener, args ...string) (mbps, broker, client float64, err error) {
	full := append(append([]string{"perf"}, args...), "--json", "--bootstrap-server", l.addr, "--command-config", l.props)
	before, err := cpuSeconds(l.pid)
	if err != nil {
		return 0, 0, 0, err
	}
	cmd := exec.Command(bin, full...)
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%s perf %v: %v", l.name, args, err)
	}
	after, err := cpuSeconds(l.pid)
	if err != nil {
		return 0, 0, 0, err
	}
	client = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var rep map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
		return 0, 0, 0, fmt.Errorf("perf output %q: %w", out, err)
	}
	mbps, _ = rep["mb_per_sec"].(float64)
	return mbps, after - before, client, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func spread(v []float64) string { return spreadf(v, 1) }

// spreadf is the median (min–max) with d decimals.
func spreadf(v []float64, d int) string {
	return fmt.Sprintf("%.*f (%.*f–%.*f)", d, median(v), d, slices.Min(v), d, slices.Max(v))
}

// waitListening polls until addr accepts connections.
func waitListening(addr string) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			return c.Close()
		}
		time.Sleep(50 * time.Millisecond) // poll interval, bounded by the deadline
	}
	return fmt.Errorf("not listening on %s", addr)
}

// writeCerts makes a CA and a loopback server certificate, and returns the
// CA's PEM file, the broker's PEM key store (key, then chain), and the
// chain and key as separate files (kfake).
func writeCerts(dir string) (caFile, keystore, certFile, keyFile string, err error) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return "", "", "", "", err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return "", "", "", "", err
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	ks := append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	ks = append(ks, caPEM...)
	caFile, keystore = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "broker.keystore.pem")
	certFile, keyFile = filepath.Join(dir, "broker.crt"), filepath.Join(dir, "broker.key")
	for path, data := range map[string][]byte{
		caFile: caPEM, keystore: ks,
		certFile: append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), caPEM...),
		keyFile:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return "", "", "", "", err
		}
	}
	return caFile, keystore, certFile, keyFile, nil
}
