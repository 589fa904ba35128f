package herder

import (
	"errors"
	"log/slog"

	"github.com/vltava/vltava/internal/connect/worker"
)

// NewDistributed starts a distributed worker.
func NewDistributed(cfg *worker.Config, log *slog.Logger) (*Standalone, error) {
	return nil, errors.New("distributed mode is not available yet")
}
