package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumedRecord is the --format json shape of one record. Keys and values
// are strings when they are valid UTF-8 and base64 otherwise (flagged by
// key_encoding/value_encoding), so binary data survives a round trip.
type consumedRecord struct {
	Topic         string           `json:"topic"`
	Partition     int32            `json:"partition"`
	Offset        int64            `json:"offset"`
	Timestamp     int64            `json:"timestamp"`
	Key           *string          `json:"key"`
	KeyEncoding   string           `json:"key_encoding,omitempty"`
	Value         *string          `json:"value"`
	ValueEncoding string           `json:"value_encoding,omitempty"`
	Headers       []consumedHeader `json:"headers"`
}

type consumedHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// bytesField renders b for JSON: nil stays null.
func bytesField(b []byte) (*string, string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, ""
	}
	enc, _ := json.Marshal(b) // []byte marshals as a base64 string
	s, _ := strconv.Unquote(string(enc))
	return &s, "base64"
}

// recordFormatter writes records in one of the --format layouts.
type recordFormatter struct {
	format string
	keySep string
	w      io.Writer
	kafka  kafkaFormatter // for format "kafka"
	// schemas decodes wire-format keys and values to JSON
	// (--key-schema-id, --value-schema-id); nil: printed as they are.
	schemas *schemaCodecs
	schemaF *schemaFlags
}

func (f *recordFormatter) write(r *kgo.Record) error {
	switch f.format {
	case "kafka":
		_, err := f.w.Write(f.kafka.format(r))
		return err
	case "value":
		_, err := fmt.Fprintf(f.w, "%s\n", r.Value)
		return err
	case "kv":
		key := "null"
		if r.Key != nil {
			key = string(r.Key)
		}
		_, err := fmt.Fprintf(f.w, "%s%s%s\n", key, f.keySep, r.Value)
		return err
	default:
		c := consumedRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			Timestamp: r.Timestamp.UnixMilli(), Headers: []consumedHeader{}}
		c.Key, c.KeyEncoding = bytesField(r.Key)
		c.Value, c.ValueEncoding = bytesField(r.Value)
		for _, h := range r.Headers {
			c.Headers = append(c.Headers, consumedHeader{Key: h.Key, Value: string(h.Value)})
		}
		b, err := json.Marshal(c)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(f.w, "%s\n", b)
		return err
	}
}

// consumeOptions are the `consume` flags after validation.
type consumeOptions struct {
	fromBeginning bool
	offset        string
	partition     int32
	group         string
	maxMessages   int
	timeout       time.Duration
	isolation     string
	format        string
	keySep        string
	fetchMaxWait  time.Duration // fetch.max.wait.ms; 0: client default
}

// startOffset resolves --offset and --from-beginning to a kgo.Offset.
// Like kafka-console-consumer, the default is the end of the log.
func (o *consumeOptions) startOffset() (kgo.Offset, error) {
	switch o.offset {
	case "":
		if o.fromBeginning {
			return kgo.NewOffset().AtStart(), nil
		}
		return kgo.NewOffset().AtEnd(), nil
	case "earliest":
		return kgo.NewOffset().AtStart(), nil
	case "latest":
		return kgo.NewOffset().AtEnd(), nil
	}
	n, err := strconv.ParseInt(o.offset, 10, 64)
	if err != nil || n < 0 {
		return kgo.Offset{}, fmt.Errorf("--offset %q: want a non-negative number, earliest or latest", o.offset)
	}
	if o.partition < 0 {
		return kgo.Offset{}, errors.New("--offset N needs --partition")
	}
	return kgo.NewOffset().At(n), nil
}

func (o *consumeOptions) clientOpts(topic string) ([]kgo.Opt, error) {
	if o.offset != "" && o.fromBeginning {
		return nil, errors.New("--offset and --from-beginning are mutually exclusive")
	}
	if o.group != "" && (o.partition >= 0 || o.offset != "") {
		return nil, errors.New("--group cannot be combined with --partition or --offset (a group's offsets decide where to start)")
	}
	switch o.format {
	case "value", "kv", "json", "kafka":
	default:
		return nil, fmt.Errorf("--format %q: want value, kv, json or kafka", o.format)
	}
	start, err := o.startOffset()
	if err != nil {
		return nil, err
	}
	opts, err := o.fetchOpts()
	if err != nil {
		return nil, err
	}
	switch {
	case o.group != "":
		// Commit exactly what was printed: with --max-messages a poll may
		// return records that are never shown and must not be committed.
		opts = append(opts, kgo.ConsumerGroup(o.group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(start), kgo.AutoCommitMarks())
	case o.partition >= 0:
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {o.partition: start}}))
	default:
		opts = append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(start))
	}
	return opts, nil
}

// fetchOpts are the fetch settings: fetch.max.wait.ms and the isolation
// level.
func (o *consumeOptions) fetchOpts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if o.fetchMaxWait > 0 {
		opts = append(opts, kgo.FetchMaxWait(o.fetchMaxWait))
	}
	switch o.isolation {
	case "read_uncommitted":
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	case "read_committed":
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	default:
		return nil, fmt.Errorf("isolation level %q: want read_committed or read_uncommitted", o.isolation)
	}
	return opts, nil
}

func newConsumeCommand() *cobra.Command {
	o := consumeOptions{}
	var (
		topic       string
		timeoutMs   int64
		props       propertyFlags
		formatProps []string
		schemas     schemaFlags
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Print records from a topic (kafka-console-consumer.sh)",
		Long: `Print records, one per line. Without --from-beginning or --offset it starts
at the end of the log. --timeout (Kafka: --timeout-ms) exits once no record
arrived for that long; --max-messages exits after that many. Ctrl-C
(SIGINT/SIGTERM) stops cleanly, committing the offsets of printed records
when --group is given.

--format json prints one object per line with topic, partition, offset,
timestamp (Unix milliseconds), key, value and headers. Kafka's formatter
properties (--property print.key=true, print.timestamp, print.partition,
print.offset, print.headers, print.value, key.separator, line.separator,
headers.separator, null.literal) print as kafka-console-consumer.sh does.

Consumer properties come from --consumer.config FILE and
--consumer-property k=v: group.id, auto.offset.reset, isolation.level,
fetch.max.wait.ms and the client settings of --command-config; flags given
on the command line win.`,
		Example: `  vltava consume orders --from-beginning --max-messages 10
  vltava consume orders --partition 0 --offset 42 --format kv
  vltava consume orders --group billing --timeout 5s --format json
  vltava consume --topic orders --from-beginning --property print.key=true --property print.offset=true --timeout-ms 5000`,
		Args: cobra.MaximumNArgs(1),
		RunE: clusterCommand(func(in *invocation) error {
			topic, err := topicArg(in.args, topic)
			if err != nil {
				return err
			}
			fl := in.cmd.Flags()
			if fl.Changed("timeout-ms") {
				if fl.Changed("timeout") {
					return errors.New("--timeout and --timeout-ms are mutually exclusive")
				}
				if timeoutMs < 0 {
					return errors.New("--timeout-ms must not be negative")
				}
				o.timeout = time.Duration(timeoutMs) * time.Millisecond
			}
			kvs, err := props.load()
			if err != nil {
				return err
			}
			warnings, err := applyConsumerProps(kvs, &o, &in.props, fl.Changed)
			if err != nil {
				return err
			}
			for _, w := range warnings {
				fmt.Fprintln(in.stderr, "warning:", w)
			}
			rf := &recordFormatter{format: o.format, keySep: o.keySep, w: in.stdout}
			if len(formatProps) > 0 {
				if fl.Changed("format") && o.format != "kafka" {
					return errors.New("--property and --format are mutually exclusive")
				}
				rf.format, o.format = "kafka", "kafka"
			}
			if o.format == "kafka" {
				if rf.kafka, err = parseKafkaFormatter(formatProps); err != nil {
					return err
				}
			}
			copts, err := o.clientOpts(topic)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(in.ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			cl, adm, err := in.cluster(ctx, copts...)
			if err != nil {
				return err
			}
			// Fail clearly on a missing topic rather than waiting forever.
			td, err := adm.ListTopics(ctx, topic)
			if err != nil {
				return fmt.Errorf("looking up topic %q: %w", topic, err)
			}
			if d, ok := td[topic]; !ok || d.Err != nil {
				return fmt.Errorf("topic %q does not exist", topic)
			}
			if schemas.enabled() {
				if rf.schemas, err = schemas.codecs(); err != nil {
					return err
				}
				rf.schemaF = &schemas
			}
			n, err := consumeRecords(ctx, cl, &o, rf)
			fmt.Fprintf(in.stderr, "Processed a total of %d messages\n", n)
			return err
		}),
	}
	f := cmd.Flags()
	f.StringVar(&topic, "topic", "", "topic to consume (Kafka form of the TOPIC argument)")
	f.BoolVar(&o.fromBeginning, "from-beginning", false, "start at the earliest offset when there is no committed offset")
	f.StringVar(&o.offset, "offset", "", "start offset: N (needs --partition), earliest or latest")
	f.Int32Var(&o.partition, "partition", -1, "consume only this partition")
	f.StringVar(&o.group, "group", "", "consumer group id; offsets of printed records are committed")
	f.IntVar(&o.maxMessages, "max-messages", 0, "exit after this many records (0: no limit)")
	f.DurationVar(&o.timeout, "timeout", 0, "exit after no record arrived for this long (0: wait forever)")
	f.Int64Var(&timeoutMs, "timeout-ms", 0, "Kafka's spelling of --timeout, in milliseconds")
	f.StringVar(&o.isolation, "isolation-level", "read_uncommitted", "read_committed or read_uncommitted")
	f.StringVar(&o.format, "format", "value", "output format: value, kv, json or kafka (kafka-console-consumer.sh's layout, set by --property)")
	f.StringVar(&o.keySep, "key-separator", "\t", "separator between key and value for --format kv")
	f.Var(deserializerFlag("key.deserializer"), "key-deserializer", "Kafka's key deserializer class (String, ByteArray or Bytes deserializers only)")
	f.Var(deserializerFlag("value.deserializer"), "value-deserializer", "Kafka's value deserializer class (String, ByteArray or Bytes deserializers only)")
	f.StringArrayVar(&formatProps, "property", nil, "Kafka formatter property k=v (print.key, print.timestamp, ...; repeatable)")
	schemas.register(cmd, "decoded")
	props.register(cmd, "consumer.config", "consumer-property", "consumer")
	return cmd
}

// consumeRecords polls until ctx ends, max messages are printed, or the
// idle timeout passes, then commits printed records when in a group.
func consumeRecords(ctx context.Context, cl *kgo.Client, o *consumeOptions, f *recordFormatter) (int, error) {
	n := 0
	var result error
loop:
	for {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if o.timeout > 0 {
			pctx, cancel = context.WithTimeout(ctx, o.timeout)
		}
		fetches := cl.PollFetches(pctx)
		idle := pctx.Err() != nil && ctx.Err() == nil
		cancel()
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, context.DeadlineExceeded) {
				continue
			}
			result = fmt.Errorf("fetching %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
			break loop
		}
		for _, r := range fetches.Records() {
			if f.schemas != nil {
				if err := f.schemas.decode(ctx, f.schemaF, r); err != nil {
					result = err
					break loop
				}
			}
			if err := f.write(r); err != nil {
				result = err
				break loop
			}
			n++
			if o.group != "" {
				cl.MarkCommitRecords(r)
			}
			if o.maxMessages > 0 && n >= o.maxMessages {
				break loop
			}
		}
		if ctx.Err() != nil || (idle && fetches.NumRecords() == 0) {
			break
		}
	}
	if o.group != "" {
		// The signal context may be done; commit with a fresh bound.
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cl.CommitMarkedOffsets(cctx); err != nil && result == nil {
			result = fmt.Errorf("committing offsets for group %q: %w", o.group, err)
		}
	}
	return n, result
}
