package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// maxLineBytes bounds one input line (one record) for `produce`; Kafka's
// default message.max.bytes is about 1 MiB, so 16 MiB leaves ample room.
const maxLineBytes = 16 << 20

// producerSettings are the flags shared by `produce` and `perf produce`.
type producerSettings struct {
	acks        string
	compression string
	linger      time.Duration
	batchMax    int32
	// noIdempotence is enable.idempotence=false from producer properties.
	noIdempotence bool
}

func (s *producerSettings) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.acks, "acks", "all", "required acks: 0, 1, all (or -1) (Kafka: --request-required-acks)")
	cmd.Flags().StringVar(&s.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4, zstd (Kafka: --compression-codec)")
	cmd.Flags().DurationVar(&s.linger, "linger", 0, "how long to wait for a batch to fill (Kafka's linger.ms), e.g. 5ms")
	cmd.Flags().Int32Var(&s.batchMax, "batch-max-bytes", 0, "maximum batch size in bytes (Kafka's batch.size; 0: client default) (Kafka: --batch-size)")
	flagAliases(cmd, map[string]string{"request-required-acks": "acks", "compression-codec": "compression", "batch-size": "batch-max-bytes"})
}

// opts translates the settings into kgo options. Idempotence needs
// acks=all (KIP-98), so it is switched off for 0 and 1 as the Java
// producer does when acks is explicitly lowered.
func (s *producerSettings) opts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	switch s.acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("--acks %q: want 0, 1, all or -1", s.acks)
	}
	var codec kgo.CompressionCodec
	switch s.compression {
	case "none", "":
		codec = kgo.NoCompression()
	case "gzip":
		codec = kgo.GzipCompression()
	case "snappy":
		codec = kgo.SnappyCompression()
	case "lz4":
		codec = kgo.Lz4Compression()
	case "zstd":
		codec = kgo.ZstdCompression()
	default:
		return nil, fmt.Errorf("--compression %q: want none, gzip, snappy, lz4 or zstd", s.compression)
	}
	if s.noIdempotence {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	if s.linger < 0 {
		return nil, errors.New("--linger must not be negative")
	}
	opts = append(opts, kgo.ProducerLinger(s.linger))
	if s.batchMax < 0 {
		return nil, errors.New("--batch-max-bytes must not be negative")
	}
	if s.batchMax > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(s.batchMax))
	}
	return opts, nil
}

// recordParser turns console input lines into records, like
// kafka-console-producer's LineMessageReader: the whole line is the value
// unless key parsing is on (--key-separator), when the text before the
// first separator is the key.
type recordParser struct {
	topic     string
	keySep    string
	headers   []kgo.RecordHeader
	partition int32 // -1: let the partitioner choose
	// schemas encodes JSON keys and values with registered schemas
	// (--key-schema-id, --value-schema-id, schema_codec.go); nil: as is.
	schemas *schemaCodecs
	schemaF *schemaFlags
}

func (p *recordParser) parse(line string) (*kgo.Record, error) {
	r := &kgo.Record{Topic: p.topic, Partition: p.partition}
	if p.keySep != "" {
		k, v, ok := strings.Cut(line, p.keySep)
		if !ok {
			return nil, fmt.Errorf("no key separator %q in line", p.keySep)
		}
		r.Key, line = []byte(k), v
	}
	r.Value = []byte(line)
	if len(p.headers) > 0 {
		r.Headers = append([]kgo.RecordHeader(nil), p.headers...)
	}
	if p.schemas != nil {
		if err := p.schemas.encode(context.Background(), p.schemaF, r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// produceFailure is one record that could not be produced.
type produceFailure struct {
	line int
	err  error
}

func newProduceCommand() *cobra.Command {
	var (
		file, topic string
		keySep      string
		headers     []string
		partition   int32
		ps          producerSettings
		props       propertyFlags
		readerProps []string
		schemas     schemaFlags
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Write lines from stdin or a file as records (kafka-console-producer.sh)",
		Long: `Produce one record per input line. Keys are parsed only with
--key-separator (or Kafka's --property parse.key=true, with key.separator,
tab by default). Every failed record is reported with its line number, and
the command exits non-zero if any record failed.

Producer properties come from --producer.config FILE and
--producer-property k=v (also spelled --producer-props): acks,
compression.type, linger.ms, batch.size, enable.idempotence and the client
settings of --command-config; flags given on the command line win.`,
		Example: `  echo hello | vltava produce greetings
  printf 'k1:v1\nk2:v2\n' | vltava produce orders --key-separator : --header source=cli --acks 1
  vltava produce orders --file records.txt --compression zstd --linger 10ms
  vltava produce --topic orders --property parse.key=true --property key.separator=: --producer-property acks=1`,
		Args: cobra.MaximumNArgs(1),
		RunE: clusterCommand(func(in *invocation) error {
			topic, err := topicArg(in.args, topic)
			if err != nil {
				return err
			}
			hkvs, err := parseKeyValues("--header", headers)
			if err != nil {
				return err
			}
			if err := applyReaderProps(readerProps, &keySep, in.cmd.Flags().Changed("key-separator")); err != nil {
				return err
			}
			kvs, err := props.load()
			if err != nil {
				return err
			}
			warnings, err := applyProducerProps(kvs, &ps, &in.props, in.cmd.Flags().Changed)
			if err != nil {
				return err
			}
			for _, w := range warnings {
				fmt.Fprintln(in.stderr, "warning:", w)
			}
			parser := &recordParser{topic: topic, keySep: keySep, partition: partition}
			if schemas.enabled() {
				if parser.schemas, err = schemas.codecs(); err != nil {
					return err
				}
				parser.schemaF = &schemas
			}
			for _, kv := range hkvs {
				parser.headers = append(parser.headers, kgo.RecordHeader{Key: kv[0], Value: []byte(kv[1])})
			}
			popts, err := ps.opts()
			if err != nil {
				return err
			}
			if partition >= 0 {
				popts = append(popts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			} else if partition != -1 {
				return fmt.Errorf("--partition %d: must be a partition number", partition)
			}
			input := in.cmd.InOrStdin()
			if file != "" {
				f, err := os.Open(file)
				if err != nil {
					return fmt.Errorf("--file: %w", err)
				}
				defer f.Close()
				input = f
			}
			// The Java producer may auto-create topics on first use
			// (allow.auto.create.topics); do the same.
			popts = append(popts, kgo.AllowAutoTopicCreation(), kgo.RecordDeliveryTimeout(in.props.requestTimeout+30*time.Second))
			cl, _, err := in.cluster(in.ctx, popts...)
			if err != nil {
				return err
			}
			sent, failures, err := produceLines(in.ctx, cl, input, parser)
			for _, f := range failures {
				fmt.Fprintf(in.stderr, "line %d: %v\n", f.line, f.err)
			}
			if err != nil {
				return err
			}
			if len(failures) > 0 {
				return fmt.Errorf("%d of %d records failed", len(failures), sent)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&topic, "topic", "", "topic to produce to (Kafka form of the TOPIC argument)")
	f.StringVar(&file, "file", "", "read records from this file instead of stdin")
	f.StringVar(&keySep, "key-separator", "", "parse a key before the first occurrence of this separator (off by default)")
	f.StringArrayVar(&headers, "header", nil, "header key=value added to every record (repeatable)")
	f.Int32Var(&partition, "partition", -1, "produce every record to this partition")
	f.StringArrayVar(&readerProps, "property", nil, "line reader property (Kafka's --property): parse.key=true, key.separator=SEP")
	ps.register(cmd)
	schemas.register(cmd, "encoded")
	props.register(cmd, "producer.config", "producer-property", "producer")
	flagAliases(cmd, map[string]string{"producer-props": "producer-property"})
	return cmd
}

// applyReaderProps applies kafka-console-producer's line reader properties
// (--property): parse.key turns key parsing on with key.separator (a tab
// by default, as in Kafka's LineMessageReader). --key-separator wins.
func applyReaderProps(kvs []string, keySep *string, sepChanged bool) error {
	parsed, err := parseKeyValues("--property", kvs)
	if err != nil {
		return err
	}
	parseKey, sep := false, "\t"
	for _, kv := range parsed {
		switch kv[0] {
		case "parse.key":
			b, err := strconv.ParseBool(kv[1])
			if err != nil {
				return fmt.Errorf("--property parse.key=%q: want true or false", kv[1])
			}
			parseKey = b
		case "key.separator":
			if kv[1] == "" {
				return errors.New("--property key.separator: must not be empty")
			}
			sep = kv[1]
		default:
			return fmt.Errorf("--property %s: not supported by vltava produce (supported: parse.key, key.separator)", kv[0])
		}
	}
	if parseKey && !sepChanged {
		*keySep = sep
	}
	return nil
}

// produceLines produces every line of in and waits for all acks. It
// returns how many records were attempted and the failures sorted by line.
func produceLines(ctx context.Context, cl *kgo.Client, in io.Reader, parser *recordParser) (int, []produceFailure, error) {
	var (
		mu       sync.Mutex
		failures []produceFailure
		wg       sync.WaitGroup
	)
	fail := func(line int, err error) {
		mu.Lock()
		failures = append(failures, produceFailure{line, err})
		mu.Unlock()
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	n := 0
	for sc.Scan() {
		n++
		line := n
		r, err := parser.parse(strings.TrimSuffix(sc.Text(), "\r"))
		if err != nil {
			fail(line, err)
			continue
		}
		wg.Add(1)
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				fail(line, err)
			}
		})
	}
	scanErr := sc.Err()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	sortFailures(failures)
	if scanErr != nil {
		return n, failures, fmt.Errorf("reading input after line %d: %w", n, scanErr)
	}
	return n, failures, nil
}

func sortFailures(fs []produceFailure) {
	slices.SortStableFunc(fs, func(a, b produceFailure) int { return a.line - b.line })
}
