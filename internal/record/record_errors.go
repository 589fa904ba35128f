package record

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// RecordError is one record of a produced batch refused by validation
// (KIP-467): its index in the batch and why.
type RecordError struct {
	BatchIndex int32
	Message    string
}

// RecordValidationError is a batch refused for the records in Records, as
// Kafka's RecordValidationException: it wraps INVALID_TIMESTAMP when any
// record failed on its timestamp, INVALID_RECORD otherwise, and its message
// is the one Kafka sends as the partition's error message.
type RecordValidationError struct {
	Code    *kerr.Error
	Summary string
	Records []RecordError
}

func (e *RecordValidationError) Error() string { return e.Summary }

func (e *RecordValidationError) Unwrap() error { return e.Code }

// recordErrors builds the error for the refused records as Kafka's
// LogValidator.processRecordErrors words it.
func recordErrors(errs []RecordError, anyTimestamp bool) error {
	if anyTimestamp {
		return &RecordValidationError{Code: kerr.InvalidTimestamp,
			Summary: "One or more records have been rejected due to invalid timestamp", Records: errs}
	}
	shown := errs[:min(len(errs), 3)]
	return &RecordValidationError{Code: kerr.InvalidRecord,
		Summary: fmt.Sprintf("One or more records have been rejected due to %d record errors in total, and only showing the first three errors at most: %v",
			len(errs), shown),
		Records: errs}
}
