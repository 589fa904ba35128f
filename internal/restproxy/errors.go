package restproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Error codes of Confluent's REST Proxy (io.confluent.kafkarest.Errors and
// rest-utils' KafkaExceptionMapper): the HTTP status times 100 plus a
// sub-code. The HTTP status is always Code/100, except where a v3 error uses
// the bare status (404 for an unknown cluster, as Confluent's
// NotFoundException does).
const (
	codeBadRequest           = 40002 // a Kafka request refused as invalid (KAFKA_BAD_REQUEST)
	codeConsumerConfig       = 40001 // an invalid consumer configuration
	codeUnauthenticated      = 40101 // Kafka refused the credentials
	codeForbidden            = 40301 // Kafka's authorizer denied the operation
	codeTopicNotFound        = 40401
	codePartitionNotFound    = 40402
	codeConsumerNotFound     = 40403 // also UNKNOWN_TOPIC_OR_PARTITION from Kafka
	codeLeaderNotAvailable   = 40404
	codeGroupNotFound        = 40405
	codeFormatMismatch       = 40601
	codeAlreadySubscribed    = 40901
	codeConsumerExists       = 40902
	codeIllegalState         = 40903
	codeTooLarge             = 41301
	codeUnsupportedMedia     = 41501
	codeKeySchemaMissing     = 42201
	codeValueSchemaMissing   = 42202
	codeJSONConversion       = 42203
	codeInvalidConsumerConf  = 42204
	codeInvalidSchema        = 42205
	codeInvalidPayload       = 42206
	codeSerialization        = 42207
	codeTooManyRequests      = 42901
	codeKafkaError           = 50002
	codeKafkaRetriable       = 50003
	codeBrokerNotAvailable   = 50302
	codeServiceUnavailable   = 50301
	codeInternalServerError  = 50001
	codeRequestTimeout       = 40801
	codeMethodNotAllowedBare = 405
)

// apiError is an error answered as Confluent's {"error_code", "message"}.
type apiError struct {
	status int
	code   int
	msg    string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s", e.code, e.msg) }

// errf is an apiError whose HTTP status is code/100.
func errf(code int, format string, args ...any) *apiError {
	return &apiError{status: code / 100, code: code, msg: fmt.Sprintf(format, args...)}
}

// bareErr is an error whose code is the HTTP status itself, as Confluent's
// v3 answers a JAX-RS NotFoundException.
func bareErr(status int, format string, args ...any) *apiError {
	return &apiError{status: status, code: status, msg: fmt.Sprintf(format, args...)}
}

func errTopicNotFound() *apiError     { return errf(codeTopicNotFound, "Topic not found.") }
func errPartitionNotFound() *apiError { return errf(codePartitionNotFound, "Partition not found.") }
func errConsumerNotFound() *apiError {
	return errf(codeConsumerNotFound, "Consumer instance not found.")
}
func errPayload(format string, args ...any) *apiError {
	return errf(codeInvalidPayload, "Payload error. "+format, args...)
}

// kafkaErr translates an error of a Kafka request into the REST error
// Confluent's KafkaExceptionMapper gives it.
func kafkaErr(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed,
			kerr.TransactionalIDAuthorizationFailed, kerr.DelegationTokenAuthorizationFailed:
			return errf(codeForbidden, "%s", ke.Description)
		case kerr.SaslAuthenticationFailed, kerr.IllegalSaslState, kerr.UnsupportedSaslMechanism:
			return errf(codeUnauthenticated, "%s", ke.Description)
		case kerr.UnknownTopicOrPartition, kerr.UnknownTopicID:
			return errf(codeConsumerNotFound, "%s", ke.Description)
		case kerr.BrokerNotAvailable:
			return errf(codeBrokerNotAvailable, "%s", ke.Description)
		case kerr.ThrottlingQuotaExceeded:
			return errf(codeTooManyRequests, "%s", ke.Description)
		case kerr.InvalidReplicationFactor, kerr.SecurityDisabled, kerr.UnsupportedVersion, kerr.InvalidPartitions,
			kerr.InvalidRequest, kerr.UnknownServerError, kerr.PolicyViolation, kerr.TopicAlreadyExists,
			kerr.InvalidConfig, kerr.TopicDeletionDisabled, kerr.InvalidTopicException, kerr.InvalidReplicaAssignment,
			kerr.InvalidRecord, kerr.CorruptMessage, kerr.MessageTooLarge, kerr.RecordListTooLarge:
			return errf(codeBadRequest, "%s", ke.Description)
		}
		if ke.Retriable {
			return errf(codeKafkaRetriable, "%s", ke.Description)
		}
		return errf(codeKafkaError, "%s", ke.Description)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errf(codeKafkaRetriable, "Retriable Kafka error: request timed out")
	}
	if isAuthFailure(err) {
		return errf(codeUnauthenticated, "Authentication failed: %v", err)
	}
	if errors.Is(err, kgo.ErrClientClosed) {
		return errf(codeKafkaRetriable, "Retriable Kafka error: client closed")
	}
	return errf(codeKafkaError, "Kafka error: %v", err)
}

// isAuthFailure reports whether err is the SASL exchange's refusal.
func isAuthFailure(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke == kerr.SaslAuthenticationFailed
	}
	return false
}

// errorBody is Confluent's error shape.
type errorBody struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

// writeError answers err in Confluent's shape.
func writeError(w http.ResponseWriter, contentType string, err error) {
	ae := kafkaErr(err)
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(ae.status)
	json.NewEncoder(w).Encode(errorBody{ErrorCode: ae.code, Message: ae.msg})
}
