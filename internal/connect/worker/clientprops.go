package worker

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// producerOpts maps Kafka producer properties (the worker's producer.*, a
// connector's producer.override.*) onto kgo options. A property franz-go
// has no equivalent for is an error naming it, never ignored.
func producerOpts(props map[string]string) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	for k, v := range props {
		v = strings.TrimSpace(v)
		switch k {
		case "acks":
			switch v {
			case "all", "-1":
				opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
			case "1":
				opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
			case "0":
				opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
			default:
				return nil, fmt.Errorf("%s=%s: want all, -1, 0 or 1", k, v)
			}
		case "linger.ms":
			n, err := msValue(k, v)
			if err != nil {
				return nil, err
			}
			opts = append(opts, kgo.ProducerLinger(n))
		case "batch.size", "max.request.size":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("%s=%s: not a positive number", k, v)
			}
			opts = append(opts, kgo.ProducerBatchMaxBytes(int32(n)))
		case "compression.type":
			var c kgo.CompressionCodec
			switch v {
			case "none":
				c = kgo.NoCompression()
			case "gzip":
				c = kgo.GzipCompression()
			case "snappy":
				c = kgo.SnappyCompression()
			case "lz4":
				c = kgo.Lz4Compression()
			case "zstd":
				c = kgo.ZstdCompression()
			default:
				return nil, fmt.Errorf("%s=%s: want none, gzip, snappy, lz4 or zstd", k, v)
			}
			opts = append(opts, kgo.ProducerBatchCompression(c))
		case "enable.idempotence":
			if v == "false" {
				opts = append(opts, kgo.DisableIdempotentWrite())
			} else if v != "true" {
				return nil, fmt.Errorf("%s=%s: want true or false", k, v)
			}
		case "client.id":
			opts = append(opts, kgo.ClientID(v))
		case "delivery.timeout.ms":
			n, err := msValue(k, v)
			if err != nil {
				return nil, err
			}
			opts = append(opts, kgo.RecordDeliveryTimeout(n))
		case "max.in.flight.requests.per.connection":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("%s=%s: not a positive number", k, v)
			}
			opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(n))
		case "buffer.memory", "retries", "retry.backoff.ms", "request.timeout.ms", "key.serializer", "value.serializer":
			// Connect sets the serializers itself; franz-go retries until
			// delivery.timeout.ms and buffers by record count.
			if k == "key.serializer" || k == "value.serializer" {
				return nil, fmt.Errorf("%s cannot be set: Connect serializes with its converters", k)
			}
		default:
			return nil, fmt.Errorf("%s is not a supported producer property", k)
		}
	}
	return opts, nil
}

// consumerOpts maps Kafka consumer properties onto kgo options (see
// producerOpts).
func consumerOpts(props map[string]string) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	for k, v := range props {
		v = strings.TrimSpace(v)
		switch k {
		case "auto.offset.reset":
			switch v {
			case "earliest":
				opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			case "latest":
				opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
			case "none":
				opts = append(opts, kgo.ConsumeResetOffset(kgo.NoResetOffset()))
			default:
				return nil, fmt.Errorf("%s=%s: want earliest, latest or none", k, v)
			}
		case "isolation.level":
			switch v {
			case "read_committed":
				opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
			case "read_uncommitted":
				opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
			default:
				return nil, fmt.Errorf("%s=%s: want read_committed or read_uncommitted", k, v)
			}
		case "fetch.max.bytes", "max.partition.fetch.bytes", "fetch.min.bytes":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("%s=%s: not a positive number", k, v)
			}
			switch k {
			case "fetch.max.bytes":
				opts = append(opts, kgo.FetchMaxBytes(int32(n)))
			case "max.partition.fetch.bytes":
				opts = append(opts, kgo.FetchMaxPartitionBytes(int32(n)))
			default:
				opts = append(opts, kgo.FetchMinBytes(int32(n)))
			}
		case "fetch.max.wait.ms":
			n, err := msValue(k, v)
			if err != nil {
				return nil, err
			}
			opts = append(opts, kgo.FetchMaxWait(n))
		case "session.timeout.ms":
			n, err := msValue(k, v)
			if err != nil {
				return nil, err
			}
			opts = append(opts, kgo.SessionTimeout(n))
		case "heartbeat.interval.ms":
			n, err := msValue(k, v)
			if err != nil {
				return nil, err
			}
			opts = append(opts, kgo.HeartbeatInterval(n))
		case "max.poll.interval.ms":
			n, err := msValue(k, v)
			if err != nil {
				return nil, err
			}
			opts = append(opts, kgo.RebalanceTimeout(n))
		case "client.id":
			opts = append(opts, kgo.ClientID(v))
		case "group.instance.id":
			opts = append(opts, kgo.InstanceID(v))
		case "max.poll.records":
			// Taken by the sink loop (maxPollRecords), not a kgo option.
			if n, err := strconv.Atoi(v); err != nil || n <= 0 {
				return nil, fmt.Errorf("%s=%s: not a positive number", k, v)
			}
		case "partition.assignment.strategy":
			bal, err := balancers(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			opts = append(opts, kgo.Balancers(bal...))
		case "key.deserializer", "value.deserializer", "enable.auto.commit", "group.id":
			return nil, fmt.Errorf("%s cannot be set: Connect manages it", k)
		case "retry.backoff.ms", "request.timeout.ms", "auto.commit.interval.ms":
		default:
			return nil, fmt.Errorf("%s is not a supported consumer property", k)
		}
	}
	return opts, nil
}

func balancers(v string) ([]kgo.GroupBalancer, error) {
	var out []kgo.GroupBalancer
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		switch s[strings.LastIndexByte(s, '.')+1:] {
		case "RangeAssignor":
			out = append(out, kgo.RangeBalancer())
		case "RoundRobinAssignor":
			out = append(out, kgo.RoundRobinBalancer())
		case "StickyAssignor":
			out = append(out, kgo.StickyBalancer())
		case "CooperativeStickyAssignor":
			out = append(out, kgo.CooperativeStickyBalancer())
		default:
			return nil, fmt.Errorf("unknown assignor %s", s)
		}
	}
	return out, nil
}

// checkAdminProp accepts the admin.* keys that need no effect here (the
// worker's admin client is franz-go's kadm on the worker's own client).
func checkAdminProp(k string) error {
	switch k {
	case "request.timeout.ms", "retry.backoff.ms", "client.id", "default.api.timeout.ms":
		return nil
	}
	return fmt.Errorf("not a supported admin property")
}

func msValue(k, v string) (time.Duration, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%s: not a number of milliseconds", k, v)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// maxPollRecords is consumer max.poll.records (Kafka's default 500).
func maxPollRecords(props map[string]string) int {
	if n, err := strconv.Atoi(strings.TrimSpace(props["max.poll.records"])); err == nil && n > 0 {
		return n
	}
	return 500
}
