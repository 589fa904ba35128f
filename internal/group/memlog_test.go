package group

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/testing/poll"
)

// memLog is an in-memory OffsetsLog: per partition, the appended batches
// with offsets assigned. failNext makes the next append fail; block holds
// Bounds (the start of a load) until closed.
type memLog struct {
	mu       sync.Mutex
	parts    map[int32][][]byte
	next     map[int32]int64
	failNext error
	block    chan struct{}
}

func newMemLog() *memLog {
	return &memLog{parts: map[int32][][]byte{}, next: map[int32]int64{}}
}

func (l *memLog) Append(p int32, batch []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.failNext; err != nil {
		l.failNext = nil
		return err
	}
	h, err := record.ParseHeader(batch)
	if err != nil {
		return err
	}
	b := append([]byte(nil), batch...)
	record.SetBaseOffset(b, l.next[p])
	l.next[p] += int64(h.LastOffsetDelta) + 1
	l.parts[p] = append(l.parts[p], b)
	return nil
}

func (l *memLog) Bounds(p int32) (int64, int64, error) {
	l.mu.Lock()
	block := l.block
	l.mu.Unlock()
	if block != nil {
		<-block
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return 0, l.next[p], nil
}

func (l *memLog) Read(p int32, offset int64, maxBytes int) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []byte
	for _, b := range l.parts[p] {
		h, _ := record.ParseHeader(b)
		if h.LastOffset() < offset {
			continue
		}
		if len(out) > 0 && len(out)+len(b) > maxBytes {
			break
		}
		out = append(out, b...)
	}
	if out == nil {
		return nil, errors.New("read past the end")
	}
	return out, nil
}

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
