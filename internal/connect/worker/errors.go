package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/connect"
)

// Stage is where in a task's pipeline an error happened, as Kafka's
// org.apache.kafka.connect.runtime.errors.Stage.
type Stage string

// The stages.
const (
	StageKeyConverter    Stage = "KEY_CONVERTER"
	StageValueConverter  Stage = "VALUE_CONVERTER"
	StageHeaderConverter Stage = "HEADER_CONVERTER"
	StageTransformation  Stage = "TRANSFORMATION"
	StageTaskPut         Stage = "TASK_PUT"
	StageTaskPoll        Stage = "TASK_POLL"
	StageKafkaProduce    Stage = "KAFKA_PRODUCE"
	StageKafkaConsume    Stage = "KAFKA_CONSUME"
)

// The dead letter queue's context headers, as Kafka's DeadLetterQueueReporter.
const (
	HeaderPrefix           = "__connect.errors."
	HeaderTopic            = HeaderPrefix + "topic"
	HeaderPartition        = HeaderPrefix + "partition"
	HeaderOffset           = HeaderPrefix + "offset"
	HeaderConnectorName    = HeaderPrefix + "connector.name"
	HeaderTaskID           = HeaderPrefix + "task.id"
	HeaderStage            = HeaderPrefix + "stage"
	HeaderClassName        = HeaderPrefix + "class.name"
	HeaderExceptionClass   = HeaderPrefix + "exception.class.name"
	HeaderExceptionMessage = HeaderPrefix + "exception.message"
	HeaderExceptionTrace   = HeaderPrefix + "exception.stacktrace"
)

// errorPolicy is a task's errors.* settings.
type errorPolicy struct {
	tolerateAll   bool
	retryTimeout  time.Duration // <0: forever
	retryDelayMax time.Duration
	log           bool
	logMessages   bool
	dlqTopic      string
	dlqRF         int16
	dlqHeaders    bool
}

func parseErrorPolicy(props map[string]string, sink bool) (errorPolicy, error) {
	def := SourceDef()
	if sink {
		def = SinkDef()
	}
	p, err := def.Parse(props)
	if err != nil {
		return errorPolicy{}, err
	}
	ep := errorPolicy{
		tolerateAll:   strings.EqualFold(p[KeyTolerance].(string), "all"),
		retryTimeout:  time.Duration(p[KeyRetryTimeout].(int64)) * time.Millisecond,
		retryDelayMax: time.Duration(p[KeyRetryDelayMax].(int64)) * time.Millisecond,
		log:           p[KeyErrorsLog].(bool),
		logMessages:   p[KeyErrorsLogMessages].(bool),
	}
	if p[KeyRetryTimeout].(int64) < 0 {
		ep.retryTimeout = -1
	}
	if sink {
		ep.dlqTopic = strings.TrimSpace(p[KeyDLQTopic].(string))
		ep.dlqRF = p[KeyDLQRF].(int16)
		ep.dlqHeaders = p[KeyDLQHeaders].(bool)
	}
	return ep, nil
}

// errorHandler runs one pipeline step under a task's error policy (Kafka's
// RetryWithToleranceOperator): retriable errors are retried with
// exponential backoff up to errors.retry.timeout; an error that remains is
// logged (errors.log.enable), the record sent to the dead letter queue (sink
// tasks), and skipped with errors.tolerance=all, or fails the task.
type errorHandler struct {
	policy errorPolicy
	log    *slog.Logger
	conn   string
	task   int
	dlq    *kgo.Client // nil: no dead letter queue
}

// toleranceExceeded is the failure of a task whose error was not tolerated.
type toleranceExceeded struct {
	stage Stage
	err   error
}

func (e *toleranceExceeded) Error() string {
	return fmt.Sprintf("Tolerance exceeded in error handler (stage %s): %v", e.stage, e.err)
}
func (e *toleranceExceeded) Unwrap() error { return e.err }

// run executes op; it returns nil when op succeeded, errSkip when the
// record is to be skipped, or the error that fails the task.
func (h *errorHandler) run(ctx context.Context, stage Stage, class string, orig *kgo.Record, op func() error) error {
	err := h.retry(ctx, op)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if te := (*TransformError)(nil); class == "" && errors.As(err, &te) {
		class = te.Class
	}
	if h.policy.log {
		attrs := []any{"connector", h.conn, "task", h.task, "stage", string(stage), "class", class, "err", err}
		if orig != nil {
			attrs = append(attrs, "topic", orig.Topic, "partition", orig.Partition, "offset", orig.Offset)
			if h.policy.logMessages {
				attrs = append(attrs, "key", string(orig.Key), "value", string(orig.Value))
			}
		}
		h.log.Error("error encountered in task", attrs...)
	}
	if !h.policy.tolerateAll {
		return &toleranceExceeded{stage: stage, err: err}
	}
	if h.dlq != nil && orig != nil {
		if derr := h.toDLQ(ctx, stage, class, orig, err); derr != nil {
			return fmt.Errorf("writing to the dead letter queue %s: %w", h.policy.dlqTopic, derr)
		}
	}
	return errSkip
}

// errSkip marks a record skipped under errors.tolerance=all.
var errSkip = errors.New("record skipped")

func (h *errorHandler) retry(ctx context.Context, op func() error) error {
	start := time.Now()
	delay := 300 * time.Millisecond
	for {
		err := op()
		if err == nil || !connect.IsRetriable(err) || h.policy.retryTimeout == 0 {
			return err
		}
		if h.policy.retryTimeout > 0 && time.Since(start)+delay > h.policy.retryTimeout {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, h.policy.retryDelayMax)
		if delay <= 0 {
			delay = time.Millisecond
		}
	}
}

func (h *errorHandler) toDLQ(ctx context.Context, stage Stage, class string, orig *kgo.Record, cause error) error {
	rec := &kgo.Record{Topic: h.policy.dlqTopic, Key: orig.Key, Value: orig.Value, Headers: append([]kgo.RecordHeader(nil), orig.Headers...)}
	if h.policy.dlqHeaders {
		add := func(k, v string) { rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)}) }
		add(HeaderTopic, orig.Topic)
		add(HeaderPartition, strconv.Itoa(int(orig.Partition)))
		add(HeaderOffset, strconv.FormatInt(orig.Offset, 10))
		add(HeaderConnectorName, h.conn)
		add(HeaderTaskID, strconv.Itoa(h.task))
		add(HeaderStage, string(stage))
		add(HeaderClassName, class)
		root := cause
		for u := errors.Unwrap(root); u != nil; u = errors.Unwrap(root) {
			root = u
		}
		add(HeaderExceptionClass, fmt.Sprintf("%T", root))
		add(HeaderExceptionMessage, cause.Error())
		add(HeaderExceptionTrace, errorTrace(cause))
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return h.dlq.ProduceSync(pctx, rec).FirstErr()
}

// EnsureTopic creates a topic if it does not exist (replication factor -1:
// the broker's default); an existing topic is fine.
func EnsureTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int32, rf int16, configs map[string]*string) error {
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, partitions, rf, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return err
	}
	return nil
}

// errorTrace is a failure's trace for statuses and the DLQ: the error and
// each error it wraps, one per line (Go has no Java stack trace; the chain
// of causes is what explains a failure).
func errorTrace(err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%T: %v", err, err)
	for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(u) {
		fmt.Fprintf(&b, "\nCaused by: %T: %v", u, u)
	}
	return b.String()
}
