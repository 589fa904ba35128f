package metadata

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Kafka's internal topics (Topic.INTERNAL_TOPICS): flagged IsInternal in
// Metadata responses.
const (
	ConsumerOffsetsTopic  = "__consumer_offsets"
	TransactionStateTopic = "__transaction_state"
)

// MaxTopicNameLength is Kafka's Topic.MAX_NAME_LENGTH.
const MaxTopicNameLength = 249

// IsInternalTopic reports whether name is one of Kafka's internal topics.
func IsInternalTopic(name string) bool {
	return name == ConsumerOffsetsTopic || name == TransactionStateTopic
}

// ValidateTopicName applies Kafka's Topic.validate rules. The error wraps
// kerr.InvalidTopicException with Kafka's message.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: Topic name is illegal, it can't be empty", kerr.InvalidTopicException)
	case name == "." || name == "..":
		return fmt.Errorf("%w: Topic name cannot be \".\" or \"..\"", kerr.InvalidTopicException)
	case len(name) > MaxTopicNameLength:
		return fmt.Errorf("%w: Topic name is illegal, it can't be longer than %d characters, topic name: %s",
			kerr.InvalidTopicException, MaxTopicNameLength, name)
	}
	for i := 0; i < len(name); i++ {
		if !legalTopicChar(name[i]) {
			return fmt.Errorf("%w: Topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'",
				kerr.InvalidTopicException, name)
		}
	}
	return nil
}

func legalTopicChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// UnifyCollisionChars maps '.' to '_': Kafka forbids two topics whose names
// differ only in those characters because metric names cannot tell them apart
// (Topic.unifyCollisionChars).
func UnifyCollisionChars(name string) string { return strings.ReplaceAll(name, ".", "_") }
