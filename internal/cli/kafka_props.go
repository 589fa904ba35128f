package cli

// Producer and consumer properties as Kafka's console and perf tools take
// them: a file (--producer.config, --consumer.config) and key=value flags
// (--producer-property, --producer-props, --consumer-property). The keys
// the commands can honour are mapped to their settings; client keys
// (client.id, request.timeout.ms, security.*) go through clientProps; any
// other key is reported with a warning and ignored, as Kafka's clients log
// "supplied but isn't a known config".

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// propertyFlags are a properties file and key=value flags of one kind.
type propertyFlags struct {
	fileFlag, kvFlag string
	file             string
	kvs              []string
}

func (p *propertyFlags) register(cmd *cobra.Command, fileFlag, kvFlag, what string) {
	p.fileFlag, p.kvFlag = fileFlag, kvFlag
	cmd.Flags().StringVar(&p.file, fileFlag, "", what+" properties file (Kafka's "+fileFlag+")")
	cmd.Flags().StringArrayVar(&p.kvs, kvFlag, nil, what+" property key=value (repeatable)")
}

// load returns the file's properties followed by the flags' (later wins).
func (p *propertyFlags) load() ([][2]string, error) {
	var out [][2]string
	if p.file != "" {
		f, err := os.Open(p.file)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", p.fileFlag, err)
		}
		defer f.Close()
		kvs, err := parseProperties(bufio.NewScanner(f))
		if err != nil {
			return nil, fmt.Errorf("--%s %s: %w", p.fileFlag, p.file, err)
		}
		out = append(out, kvs...)
	}
	kvs, err := parseKeyValues("--"+p.kvFlag, p.kvs)
	if err != nil {
		return nil, err
	}
	return append(out, kvs...), nil
}

// positiveMillis parses a non-negative millisecond count.
func positiveMillis(k, v string) (time.Duration, error) {
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 {
		return 0, fmt.Errorf("%s=%q: want a number of milliseconds", k, v)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// applyProducerProps maps producer properties onto s and client. A flag
// given on the command line wins over a property, as in Kafka's
// ConsoleProducer (maybeMergeOptions); changed reports whether it was.
func applyProducerProps(kvs [][2]string, s *producerSettings, client *clientProps, changed func(string) bool) ([]string, error) {
	var warnings []string
	for _, kv := range kvs {
		k, v := kv[0], kv[1]
		switch k {
		case "acks":
			if !changed("acks") {
				s.acks = v
			}
		case "compression.type":
			if !changed("compression") {
				s.compression = v
			}
		case "linger.ms":
			d, err := positiveMillis(k, v)
			if err != nil {
				return nil, err
			}
			if !changed("linger") {
				s.linger = d
			}
		case "batch.size":
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("batch.size=%q: want a number of bytes", v)
			}
			if !changed("batch-max-bytes") {
				s.batchMax = int32(n)
			}
		case "enable.idempotence":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("enable.idempotence=%q: want true or false", v)
			}
			s.noIdempotence = !b
		case "key.serializer", "value.serializer":
			// The commands write bytes; any serializer class is moot.
		default:
			if err := client.setOrWarn(k, v, &warnings); err != nil {
				return nil, err
			}
		}
	}
	return warnings, nil
}

// applyConsumerProps maps consumer properties onto o and client; flags
// given on the command line win.
func applyConsumerProps(kvs [][2]string, o *consumeOptions, client *clientProps, changed func(string) bool) ([]string, error) {
	var warnings []string
	for _, kv := range kvs {
		k, v := kv[0], kv[1]
		switch k {
		case "group.id":
			if !changed("group") {
				o.group = v
			}
		case "auto.offset.reset":
			switch v {
			case "earliest":
				if !changed("from-beginning") && !changed("offset") {
					o.fromBeginning = true
				}
			case "latest":
			default:
				return nil, fmt.Errorf("auto.offset.reset=%q: want earliest or latest", v)
			}
		case "isolation.level":
			if !changed("isolation-level") {
				o.isolation = v
			}
		case "fetch.max.wait.ms":
			d, err := positiveMillis(k, v)
			if err != nil {
				return nil, err
			}
			// The client's floor is 10ms; 0 would mean its default
			// (500ms), not Kafka's "answer at once".
			if d < 10*time.Millisecond {
				return nil, fmt.Errorf("fetch.max.wait.ms=%q: the smallest wait the client supports is 10", v)
			}
			o.fetchMaxWait = d
		case "key.deserializer", "value.deserializer":
			if err := checkDeserializer(k, v); err != nil {
				return nil, err
			}
		case "enable.auto.commit", "auto.commit.interval.ms":
			// The commands read bytes and commit exactly the records they
			// print (see consume); these settings are moot.
		default:
			if err := client.setOrWarn(k, v, &warnings); err != nil {
				return nil, err
			}
		}
	}
	return warnings, nil
}

// topicArg is the one topic a command works on: a positional argument or
// Kafka's --topic, not both.
func topicArg(args []string, flagTopic string) (string, error) {
	switch {
	case flagTopic != "" && len(args) > 0:
		return "", fmt.Errorf("give the topic as an argument or with --topic, not both")
	case flagTopic != "":
		return flagTopic, nil
	case len(args) == 1:
		return args[0], nil
	default:
		return "", fmt.Errorf("expected one TOPIC (or --topic), got %d argument(s)", len(args))
	}
}

// kafkaPropArgs splits Kafka's space-separated property lists
// (kafka-producer-perf-test.sh --producer-props acks=1 linger.ms=5) off
// the positional arguments: topic names cannot contain '='.
func kafkaPropArgs(args []string) (rest, props []string) {
	for _, a := range args {
		if strings.Contains(a, "=") {
			props = append(props, a)
		} else {
			rest = append(rest, a)
		}
	}
	return rest, props
}

// deserializerFlag is --key-deserializer/--value-deserializer: a class
// name checked by checkDeserializer when set.
type deserializerFlag string

func (d deserializerFlag) String() string { return "" }
func (d deserializerFlag) Type() string   { return "class" }
func (d deserializerFlag) Set(v string) error {
	return checkDeserializer(string(d), v)
}
