package rules

import (
	"errors"
	"iter"
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"
)

// kerrOf returns the Kafka error err wraps.
func kerrOf(err error) (*kerr.Error, bool) {
	var ke *kerr.Error
	ok := errors.As(err, &ke)
	return ke, ok
}

func mapKeys[K comparable, V any](m map[K]V) iter.Seq[K] { return maps.Keys(m) }
