package cli

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaFormatter prints records as kafka-console-consumer.sh's
// DefaultMessageFormatter does: the selected fields in the order
// timestamp, partition, offset, headers, key, value, each followed by
// key.separator when another field follows, then line.separator.
type kafkaFormatter struct {
	printTimestamp, printPartition, printOffset, printHeaders, printKey, printValue bool

	keySep, lineSep, headersSep, nullLiteral string
}

// bytesDeserializers print a record's bytes as they are, which is what the
// console consumer does: any other deserializer would change the output.
var bytesDeserializers = map[string]bool{
	"org.apache.kafka.common.serialization.StringDeserializer":    true,
	"org.apache.kafka.common.serialization.ByteArrayDeserializer": true,
	"org.apache.kafka.common.serialization.BytesDeserializer":     true,
}

func checkDeserializer(k, v string) error {
	if !bytesDeserializers[v] {
		return fmt.Errorf("%s=%s: only StringDeserializer, ByteArrayDeserializer and BytesDeserializer are supported (records print as bytes)", k, v)
	}
	return nil
}

// parseKafkaFormatter reads --property k=v pairs; a key Kafka's formatter
// does not have is refused rather than ignored.
func parseKafkaFormatter(props []string) (kafkaFormatter, error) {
	f := kafkaFormatter{printValue: true, keySep: "\t", lineSep: "\n", headersSep: ",", nullLiteral: "null"}
	kvs, err := parseKeyValues("--property", props)
	if err != nil {
		return f, err
	}
	for _, kv := range kvs {
		k, v := kv[0], kv[1]
		var b *bool
		switch k {
		case "print.timestamp":
			b = &f.printTimestamp
		case "print.partition":
			b = &f.printPartition
		case "print.offset":
			b = &f.printOffset
		case "print.headers":
			b = &f.printHeaders
		case "print.key":
			b = &f.printKey
		case "print.value":
			b = &f.printValue
		case "key.separator":
			f.keySep = v
		case "line.separator":
			f.lineSep = v
		case "headers.separator":
			f.headersSep = v
		case "null.literal":
			f.nullLiteral = v
		case "key.deserializer", "value.deserializer":
			if err := checkDeserializer(k, v); err != nil {
				return f, err
			}
		default:
			return f, fmt.Errorf("--property %s: not a formatter property (print.timestamp, print.partition, print.offset, print.headers, print.key, print.value, key.separator, line.separator, headers.separator, null.literal)", k)
		}
		if b != nil {
			on, err := strconv.ParseBool(v)
			if err != nil {
				return f, fmt.Errorf("--property %s=%q: want true or false", k, v)
			}
			*b = on
		}
	}
	return f, nil
}

func (f *kafkaFormatter) bytes(b []byte) string {
	if b == nil {
		return f.nullLiteral
	}
	return string(b)
}

func (f *kafkaFormatter) format(r *kgo.Record) []byte {
	var fields []string
	if f.printTimestamp {
		typ := "CreateTime"
		if r.Attrs.TimestampType() == 1 {
			typ = "LogAppendTime"
		}
		fields = append(fields, typ+":"+strconv.FormatInt(r.Timestamp.UnixMilli(), 10))
	}
	if f.printPartition {
		fields = append(fields, "Partition:"+strconv.Itoa(int(r.Partition)))
	}
	if f.printOffset {
		fields = append(fields, "Offset:"+strconv.FormatInt(r.Offset, 10))
	}
	if f.printHeaders {
		h := "NO_HEADERS"
		if len(r.Headers) > 0 {
			h = ""
			for i, hd := range r.Headers {
				if i > 0 {
					h += f.headersSep
				}
				h += hd.Key + ":" + f.bytes(hd.Value)
			}
		}
		fields = append(fields, h)
	}
	if f.printKey {
		fields = append(fields, f.bytes(r.Key))
	}
	if f.printValue {
		fields = append(fields, f.bytes(r.Value))
	}
	var out []byte
	for i, s := range fields {
		if i > 0 {
			out = append(out, f.keySep...)
		}
		out = append(out, s...)
	}
	return append(out, f.lineSep...)
}
