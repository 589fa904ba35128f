package connect

import (
	"context"
	"errors"
	"time"
)

// Connector is the part of a source or sink connector the worker drives: it
// validates and takes its configuration, splits the work into task
// configurations, and stops. The worker creates one per connector instance
// from its registered factory, calls Initialize, then Start.
type Connector interface {
	// Version is the connector's version, shown by GET /connector-plugins.
	Version() string
	// Config defines the connector's configuration keys; the worker
	// validates against it (PUT /connector-plugins/{p}/config/validate).
	Config() *ConfigDef
	// Initialize hands the connector its context, before Start.
	Initialize(ctx ConnectorContext)
	// Start begins the connector with its configuration (worker-level keys
	// such as name, connector.class and tasks.max included).
	Start(props map[string]string) error
	// TaskConfigs returns at most maxTasks task configurations.
	TaskConfigs(maxTasks int) ([]map[string]string, error)
	// Stop ends the connector. It is called once, after a successful Start.
	Stop() error
}

// ConnectorContext lets a connector talk back to the worker.
type ConnectorContext interface {
	// RequestTaskReconfiguration asks the worker to call TaskConfigs again,
	// as when a source discovers new tables.
	RequestTaskReconfiguration()
	// RaiseError fails the connector with err.
	RaiseError(err error)
}

// Validator is implemented by connectors that check more than their
// ConfigDef can say (cross-key rules); the result is merged into the
// validation output.
type Validator interface {
	Validate(props map[string]string) []ConfigValue
}

// SourceConnector is a connector whose tasks read from an external system
// into Kafka.
type SourceConnector interface {
	Connector
	// NewTask makes an unstarted task.
	NewTask() SourceTask
}

// ExactlyOnceSupport is a source connector's answer to KIP-618's question.
type ExactlyOnceSupport int

// The KIP-618 answers.
const (
	ExactlyOnceUnsupported ExactlyOnceSupport = iota
	ExactlyOnceSupported
)

// ExactlyOnceSource is implemented by source connectors that can run with
// exactly.once.source.support; connectors that do not implement it are
// treated as UNSUPPORTED when exactly.once.support=required.
type ExactlyOnceSource interface {
	ExactlyOnceSupport(props map[string]string) ExactlyOnceSupport
}

// TransactionBoundaries is implemented by source connectors whose tasks can
// define their own transaction boundaries through their
// TransactionContext (KIP-618's canDefineTransactionBoundaries); without
// it, transaction.boundary=connector is refused at validation.
type TransactionBoundaries interface {
	CanDefineTransactionBoundaries(props map[string]string) bool
}

// SinkConnector is a connector whose tasks write Kafka records into an
// external system.
type SinkConnector interface {
	Connector
	// NewTask makes an unstarted task.
	NewTask() SinkTask
}

// SourceTask reads records from an external system. The worker calls
// Initialize, Start, then Poll in a loop, and Stop, all on one goroutine:
// to stop the task the worker cancels Poll's context, so Poll must return
// promptly when it is done; Stop follows. Commit and CommitRecord may be
// called from other goroutines.
type SourceTask interface {
	Version() string
	Initialize(ctx SourceTaskContext)
	Start(props map[string]string) error
	// Poll returns the next records, or none (nil, nil) when there is nothing
	// yet; it should block a little (up to a second) rather than spin, and
	// return when ctx is done. A RetriableError makes the worker retry.
	Poll(ctx context.Context) ([]SourceRecord, error)
	// Commit is called after the offsets of polled records were flushed.
	Commit() error
	Stop() error
}

// RecordCommitter is implemented by source tasks that want to know when each
// record was acknowledged by Kafka (SourceTask.commitRecord).
type RecordCommitter interface {
	CommitRecord(rec *SourceRecord, partition int32, offset int64) error
}

// SourceTaskContext is a source task's view of the worker.
type SourceTaskContext interface {
	// Configs returns the task's configuration.
	Configs() map[string]string
	// OffsetStorageReader reads the offsets committed for this connector.
	OffsetStorageReader() OffsetStorageReader
	// TransactionContext is non-nil when the connector defines its own
	// transaction boundaries (KIP-618, transaction.boundary=connector).
	TransactionContext() TransactionContext
}

// OffsetStorageReader reads a connector's committed source offsets.
type OffsetStorageReader interface {
	// Offset returns the last committed offset of the source partition, or
	// nil if none.
	Offset(partition map[string]any) (map[string]any, error)
}

// TransactionContext lets a source task define transaction boundaries
// (KIP-618).
type TransactionContext interface {
	// CommitTransaction commits after the next batch of records polled.
	CommitTransaction()
	// CommitTransactionAfter commits after the given record.
	CommitTransactionAfter(rec *SourceRecord)
	// AbortTransaction aborts after the next batch polled.
	AbortTransaction()
	// AbortTransactionAfter aborts after the given record.
	AbortTransactionAfter(rec *SourceRecord)
}

// SinkTask writes records into an external system. The worker calls
// Initialize, Start, Open for the assigned partitions, Put with batches,
// PreCommit before committing consumer offsets, Close for revoked
// partitions, and Stop.
type SinkTask interface {
	Version() string
	Initialize(ctx SinkTaskContext)
	Start(props map[string]string) error
	// Open is called when partitions are assigned, before their records.
	Open(partitions []TopicPartition) error
	// Put delivers records; returning a RetriableError makes the worker
	// redeliver the same batch after a timeout (SinkTaskContext.Timeout).
	Put(records []SinkRecord) error
	// PreCommit flushes what was put and returns the offsets safe to commit
	// (the next offset to read, per partition). currentOffsets are those of
	// the records put so far; returning them is the usual answer.
	PreCommit(currentOffsets map[TopicPartition]int64) (map[TopicPartition]int64, error)
	// Close is called when partitions are revoked or the task stops.
	Close(partitions []TopicPartition) error
	Stop() error
}

// SinkTaskContext is a sink task's view of the worker.
type SinkTaskContext interface {
	Configs() map[string]string
	// Offset resets the consumer position of partitions (the next offset to
	// read), as a sink that stores offsets in its target system does in Open.
	Offset(offsets map[TopicPartition]int64)
	// Timeout sets how long to wait before redelivering after a
	// RetriableError.
	Timeout(d time.Duration)
	// Assignment is the partitions currently assigned.
	Assignment() []TopicPartition
	Pause(partitions ...TopicPartition)
	Resume(partitions ...TopicPartition)
	// RequestCommit asks for an offset commit soon.
	RequestCommit()
	// ErrantRecordReporter reports a record the task could not handle, to be
	// dealt with by errors.tolerance and the dead letter queue; nil when the
	// worker has no reporter configured.
	ErrantRecordReporter() ErrantRecordReporter
}

// ErrantRecordReporter reports records a sink task failed on (KIP-610).
type ErrantRecordReporter interface {
	Report(rec *SinkRecord, err error) error
}

// RetriableError marks an error after which the operation may succeed if
// retried (Kafka Connect's RetriableException).
type RetriableError struct{ Err error }

func (e *RetriableError) Error() string { return e.Err.Error() }
func (e *RetriableError) Unwrap() error { return e.Err }

// Retriable wraps err as a RetriableError.
func Retriable(err error) error { return &RetriableError{Err: err} }

// IsRetriable reports whether err is, or wraps, a RetriableError.
func IsRetriable(err error) bool {
	var r *RetriableError
	return errors.As(err, &r)
}
