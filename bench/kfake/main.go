// Command kfake runs franz-go's in-process fake Kafka cluster
// (github.com/twmb/franz-go/pkg/kfake) as a standalone single-broker process.
//
// It is the reference peer for Vltava's real-client compatibility suite
// (test/compat, VLTAVA_COMPAT_IMPL=kfake): the same suites run against it and
// against Vltava, so a failure on one side only points at a behavioural
// difference rather than at the test.
//
// Usage:
//
//	kfake -addr 127.0.0.1:9092 [-partitions 1] [-seed-topics a,b]
//	      [-auto-create=true] [-data-dir DIR [-sync]] [-config key=value ...]
//
// Once the listener is bound it prints exactly one line to stdout,
//
//	kfake ready on 127.0.0.1:9092
//
// and then serves until SIGTERM or SIGINT, when it closes the cluster (which
// flushes persisted state if -data-dir is set) and exits 0.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

// keyValues is a repeatable "key=value" flag collecting broker configs.
type keyValues map[string]string

func (kv keyValues) String() string { return fmt.Sprint(map[string]string(kv)) }

func (kv keyValues) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("expected key=value, got %q", s)
	}
	kv[k] = v
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		addr       = flag.String("addr", "127.0.0.1:9092", "host:port to listen on")
		brokers    = flag.Int("brokers", 1, "number of brokers in the cluster; the first listens on -addr, the others on ephemeral ports of the same host")
		partitions = flag.Int("partitions", 1, "partitions for auto-created topics and CreateTopics with -1 (Kafka's num.partitions)")
		seedTopics = flag.String("seed-topics", "", "comma-separated topics to create at startup")
		autoCreate = flag.Bool("auto-create", true, "allow Metadata requests to auto-create topics (auto.create.topics.enable)")
		dataDir    = flag.String("data-dir", "", "persist state here and reload it on start")
		syncWrites = flag.Bool("sync", false, "fsync every produced batch (only with -data-dir)")
		logLevel   = flag.String("log-level", "warn", "none, error, warn, info or debug")
		tlsCert    = flag.String("tls-cert", "", "PEM certificate chain: serve TLS (with -tls-key)")
		tlsKey     = flag.String("tls-key", "", "PEM private key for -tls-cert")
		saslUser   = flag.String("sasl-user", "", "require SASL, with this superuser (-sasl-mechanism, -sasl-password)")
		saslPass   = flag.String("sasl-password", "", "the SASL superuser's password")
		saslMech   = flag.String("sasl-mechanism", "SCRAM-SHA-512", "the SASL superuser's mechanism: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512")
		configs    = keyValues{}
	)
	flag.Var(configs, "config", "broker config key=value (repeatable), e.g. message.max.bytes=1000")
	flag.Parse()

	level, err := parseLevel(*logLevel)
	if err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(*addr); err != nil {
		return fmt.Errorf("bad -addr: %w", err)
	}
	// kfake always asks for 127.0.0.1:<port>; ListenFn lets us honour the
	// host from -addr (and port 0) instead.
	listened := 0
	listen := func(network, _ string) (net.Listener, error) {
		a := *addr
		if listened > 0 {
			host, _, _ := net.SplitHostPort(*addr)
			a = net.JoinHostPort(host, "0")
		}
		listened++
		return net.Listen(network, a)
	}

	opts := []kfake.Opt{
		kfake.NumBrokers(*brokers),
		kfake.ListenFn(listen),
		kfake.DefaultNumPartitions(*partitions),
		kfake.WithLogger(kfake.BasicLogger(os.Stderr, level)),
	}
	if *autoCreate {
		opts = append(opts, kfake.AllowAutoTopicCreation())
	}
	if *seedTopics != "" {
		opts = append(opts, kfake.SeedTopics(int32(*partitions), strings.Split(*seedTopics, ",")...))
	}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
		if *syncWrites {
			opts = append(opts, kfake.SyncWrites())
		}
	}
	if len(configs) > 0 {
		opts = append(opts, kfake.BrokerConfigs(configs))
	}
	if *tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			return fmt.Errorf("-tls-cert/-tls-key: %w", err)
		}
		opts = append(opts, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}}))
	}
	if *saslUser != "" {
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser(*saslMech, *saslUser, *saslPass))
	}

	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return err
	}
	addrs := c.ListenAddrs()
	if len(addrs) != *brokers {
		c.Close()
		return fmt.Errorf("expected %d listeners, got %v", *brokers, addrs)
	}
	fmt.Printf("kfake ready on %s\n", addrs[0])

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	sig := <-sigs
	slog.Info("kfake shutting down", "signal", sig.String())
	c.Close()
	return nil
}

func parseLevel(s string) (kfake.LogLevel, error) {
	switch strings.ToLower(s) {
	case "none":
		return kfake.LogLevelNone, nil
	case "error":
		return kfake.LogLevelError, nil
	case "warn":
		return kfake.LogLevelWarn, nil
	case "info":
		return kfake.LogLevelInfo, nil
	case "debug":
		return kfake.LogLevelDebug, nil
	}
	return 0, fmt.Errorf("unknown -log-level %q", s)
}
