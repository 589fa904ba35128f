package registry

import (
	"fmt"
	"net/http"
)

// Error is an answer in Confluent's error shape: an HTTP status and a
// body {"error_code": Code, "message": Message}.
type Error struct {
	Status  int
	Code    int
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

// Confluent Schema Registry's error codes.
const (
	codeSubjectNotFound          = 40401
	codeVersionNotFound          = 40402
	codeSchemaNotFound           = 40403
	codeSubjectSoftDeleted       = 40404
	codeSubjectNotSoftDeleted    = 40405
	codeVersionSoftDeleted       = 40406
	codeVersionNotSoftDeleted    = 40407
	codeSubjectLevelCompatNotSet = 40408
	codeSubjectLevelModeNotSet   = 40409
	codeIncompatibleSchema       = 409
	codeInvalidSchema            = 42201
	codeInvalidVersion           = 42202
	codeInvalidCompatibility     = 42203
	codeInvalidMode              = 42204
	codeOperationNotPermitted    = 42205
	codeReferenceExists          = 42206
	codeIDInUse                  = 42207
	codeStoreError               = 50001
	codeOperationTimeout         = 50002
	codeForwardingError          = 50003
)

func errSubjectNotFound(s string) *Error {
	return &Error{http.StatusNotFound, codeSubjectNotFound, fmt.Sprintf("Subject '%s' not found.", s)}
}

func errVersionNotFound(s string, v int) *Error {
	return &Error{http.StatusNotFound, codeVersionNotFound, fmt.Sprintf("Version %d not found.", v)}
}

func errSchemaNotFound() *Error {
	return &Error{http.StatusNotFound, codeSchemaNotFound, "Schema not found"}
}

func errSchemaIDNotFound(id int) *Error {
	return &Error{http.StatusNotFound, codeSchemaNotFound, fmt.Sprintf("Schema %d not found", id)}
}

func errInvalidSchema(format string, args ...any) *Error {
	return &Error{http.StatusUnprocessableEntity, codeInvalidSchema, "Invalid schema " + fmt.Sprintf(format, args...)}
}

func errInvalidVersion(v string) *Error {
	return &Error{http.StatusUnprocessableEntity, codeInvalidVersion,
		fmt.Sprintf("The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", v)}
}

func errInvalidCompatibility(level string) *Error {
	return &Error{http.StatusUnprocessableEntity, codeInvalidCompatibility,
		fmt.Sprintf("Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive (got %q)", level)}
}

func errInvalidMode(mode string) *Error {
	return &Error{http.StatusUnprocessableEntity, codeInvalidMode,
		fmt.Sprintf("Invalid mode. Valid values are READWRITE, READONLY, IMPORT (got %q)", mode)}
}

func errNotPermitted(format string, args ...any) *Error {
	return &Error{http.StatusUnprocessableEntity, codeOperationNotPermitted, fmt.Sprintf(format, args...)}
}

func errIncompatible(msgs []string) *Error {
	m := "Schema being registered is incompatible with an earlier schema for subject"
	if len(msgs) > 0 {
		m += ", details: " + fmt.Sprint(msgs)
	}
	return &Error{http.StatusConflict, codeIncompatibleSchema, m}
}

func errStore(err error) *Error {
	return &Error{http.StatusInternalServerError, codeStoreError, "Error while registering schema: " + err.Error()}
}

// errHTTP is an error with no registry code of its own: the code is the
// status, as Confluent's REST layer answers malformed requests.
func errHTTP(status int, msg string) *Error { return &Error{status, status, msg} }
