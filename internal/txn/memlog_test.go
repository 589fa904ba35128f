package txn

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/testing/memlog"
	"github.com/vltava/vltava/internal/testing/poll"
)

// memLog is the in-memory StateLog the tests run the coordinator over.
type memLog = memlog.Log

func newMemLog() *memLog { return memlog.New() }

// stubLeaders is a MarkerTransport whose partitions are all led by
// broker 1 (or by leaders[tp]); it records the requests and answers with
// answer (nil: NONE for every partition). hold, while set, makes every
// call fail, so markers stay pending.
type stubLeaders struct {
	mu       sync.Mutex
	leaders  map[TopicPartition]int32
	deleted  map[TopicPartition]bool
	requests []sentMarkers
	hold     bool
	// heldMarkers is the most markers one request carried while held:
	// a test releasing the hold once the sender's rounds carry every
	// pending transaction knows the next round carries them all.
	heldMarkers int
	answer      func(tp TopicPartition) int16
}

type sentMarkers struct {
	node int32
	req  *kmsg.WriteTxnMarkersRequest
}

func (s *stubLeaders) Leader(tp TopicPartition) (int32, bool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted[tp] {
		return 0, false, false
	}
	if l, ok := s.leaders[tp]; ok {
		return l, l >= 0, true
	}
	return 1, true, true
}

func (s *stubLeaders) WriteTxnMarkers(_ context.Context, node int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold {
		s.heldMarkers = max(s.heldMarkers, len(req.Markers))
		return nil, errors.New("held")
	}
	s.requests = append(s.requests, sentMarkers{node, req})
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				if s.answer != nil {
					rp.ErrorCode = s.answer(TopicPartition{t.Topic, p})
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}

func (s *stubLeaders) setHold(h bool) {
	s.mu.Lock()
	s.hold = h
	s.mu.Unlock()
}

func (s *stubLeaders) heldMax() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heldMarkers
}

func (s *stubLeaders) sent() []sentMarkers {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sentMarkers(nil), s.requests...)
}

// clock is a settable clock for timeouts and expiry.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// harness is a coordinator over a memLog leading every partition, with
// stubbed leaders and sequential producer ids from 1000.
type harness struct {
	t      *testing.T
	c      *Coordinator
	log    *memLog
	leader *stubLeaders
	clock  *clock
	nextID int64
	idMu   sync.Mutex
}

const testPartitions = 4

func testConfig() Config {
	// LoadBufferSize 1: every reload reads one batch at a time
	// (transaction.state.log.load.buffer.size bounds each read).
	return Config{NodeID: 1, NumPartitions: testPartitions, MaxTimeout: time.Minute,
		IDExpiration: time.Hour, MarkerRetryBackoff: 5 * time.Millisecond, LoadBufferSize: 1}
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, log: newMemLog(), leader: &stubLeaders{leaders: map[TopicPartition]int32{}},
		clock: &clock{t: time.UnixMilli(1_700_000_000_000)}, nextID: 1000}
	h.start(1)
	return h
}

// start (re)starts the coordinator over the harness's log with the given
// coordinator epoch.
func (h *harness) start(epoch int32) {
	h.t.Helper()
	if h.c != nil {
		h.c.Close()
	}
	h.c = NewCoordinator(Options{Config: testConfig(), Log: h.log, Markers: h.leader, Now: h.clock.now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		ProducerIDs: func(context.Context) (int64, error) {
			h.idMu.Lock()
			defer h.idMu.Unlock()
			h.nextID++
			return h.nextID, nil
		}})
	h.t.Cleanup(h.c.Close)
	led := map[int32]int32{}
	for p := int32(0); p < testPartitions; p++ {
		led[p] = epoch
	}
	h.c.Reconcile(led, testPartitions)
	poll.True(h.t, 5*time.Second, "the load", func() bool { _, loading := h.c.List(ListFilter{MinDurationMs: -1}); return !loading })
}

func (h *harness) init(id string) ProducerIDAndEpoch {
	h.t.Helper()
	p, err := h.c.InitProducerID(context.Background(), id, 60_000, noProducer)
	if err != nil {
		h.t.Fatalf("InitProducerID(%q): %v", id, err)
	}
	return p
}

func (h *harness) state(id string) Metadata {
	h.t.Helper()
	d, err := h.c.Describe(id)
	if err != nil {
		h.t.Fatalf("Describe(%q): %v", id, err)
	}
	return d.Metadata
}

// waitState polls until id is in state s.
func (h *harness) waitState(id string, s State) {
	h.t.Helper()
	poll.True(h.t, 5*time.Second, "state "+s.String(), func() bool {
		d, err := h.c.Describe(id)
		return err == nil && d.State == s
	})
}

func wantErr(t *testing.T, what string, err error, want *kerr.Error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("%s: %v, want success", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %s", what, err, want.Message)
	}
}

var (
	tpA = TopicPartition{"a", 0}
	tpB = TopicPartition{"b", 1}
)
