package streams

// DeserializationHandler is the default.deserialization.exception.handler:
// what a task does with a record its source serdes cannot decode.
type DeserializationHandler int

const (
	// DeserializationFail stops the thread with an error (Kafka Streams'
	// LogAndFailExceptionHandler, the default).
	DeserializationFail DeserializationHandler = iota
	// DeserializationContinue logs the record, counts it as skipped and
	// goes on (LogAndContinueExceptionHandler).
	DeserializationContinue
)
