package group

import (
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/memlog"
	"github.com/vltava/vltava/internal/testing/poll"
)

// memLog is the in-memory OffsetsLog the tests run the coordinator over.
type memLog = memlog.Log

func newMemLog() *memLog { return memlog.New() }

// testConfig is a fast configuration: short sessions, no initial delay.
func testConfig() Config {
	return Config{
		NodeID:                 1,
		NumPartitions:          4,
		MinSessionTimeout:      20 * time.Millisecond,
		MaxSessionTimeout:      10 * time.Second,
		MaxSize:                3,
		OffsetMetadataMaxBytes: 16,
		OffsetsRetention:       time.Hour,
	}
}

// newTestCoordinator leads every partition of log and waits for the load.
func newTestCoordinator(t *testing.T, cfg Config, log *memLog, now func() time.Time) *Coordinator {
	t.Helper()
	c := NewCoordinator(Options{Config: cfg, Log: log, Now: now})
	t.Cleanup(c.Close)
	var all []int32
	for p := int32(0); p < cfg.NumPartitions; p++ {
		all = append(all, p)
	}
	c.Reconcile(all, cfg.NumPartitions)
	waitFor(t, func() bool { _, err := c.ListGroups(nil, nil); return err == nil })
	return c
}

// waitFor polls cond until it holds or five seconds pass.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	poll.True(t, 5*time.Second, "the condition", cond)
}
