package broker_test

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchSessionsParkedDoNotStallOthers parks 1,000 long-poll fetches in
// sessions, with nothing to read, and checks that another session's fetch
// and new sessions are still answered while they wait: a parked fetch holds
// no lock the session cache needs. The cache is exactly full, so opening a
// session looks at the least recently used one, a parked session; the
// bound is the parked fetches' max wait, not a timing.
func TestFetchSessionsParkedDoNotStallOthers(t *testing.T) {
	const parked = 1000
	const parkWait = 60 * time.Second
	tn := startNode(t, map[string]string{"max.incremental.fetch.session.cache.slots": "1001"})
	admin := tn.dial()
	createTopic(admin, "s", 1, nil)
	produce(admin, "s", 0, "first")

	// The session that keeps being served, opened first.
	active := tn.dial()
	resp := do[*kmsg.FetchResponse](active, 12, sessionFetch(0, 0, map[int32]int64{0: 0}))
	if resp.ErrorCode != 0 || resp.SessionID == 0 {
		t.Fatalf("active session: error %d, id %d", resp.ErrorCode, resp.SessionID)
	}
	activeID, activeEpoch := resp.SessionID, int32(1)

	// 1,000 sessions at the log end, each then parked on an incremental
	// fetch with min_bytes 1.
	type parkedFetch struct {
		c    *conn
		req  *kmsg.FetchRequest
		corr int32
	}
	fetches := make([]parkedFetch, parked)
	for i := range fetches {
		c := tn.dial()
		resp := do[*kmsg.FetchResponse](c, 12, sessionFetch(0, 0, map[int32]int64{0: 1}))
		if resp.ErrorCode != 0 || resp.SessionID == 0 {
			t.Fatalf("session %d: error %d, id %d", i, resp.ErrorCode, resp.SessionID)
		}
		req := sessionFetch(resp.SessionID, 1, nil)
		req.MinBytes, req.MaxWaitMillis = 1, int32(parkWait.Milliseconds())
		req.SetVersion(12)
		fetches[i] = parkedFetch{c: c, req: req, corr: c.send(req)}
	}
	start := time.Now()
	bound := parkWait / 2

	// The active session is served, again and again, while they wait.
	for range 5 {
		req := sessionFetch(activeID, activeEpoch, nil)
		req.SetVersion(12)
		got, err := active.recv(req, active.send(req), bound)
		if err != nil {
			t.Fatalf("active session fetch while %d are parked: %v", parked, err)
		}
		if r := got.(*kmsg.FetchResponse); r.ErrorCode != 0 {
			t.Fatalf("active session fetch: error %d", r.ErrorCode)
		}
		activeEpoch++
	}
	// A new session is answered: the cache is full of sessions in use, so
	// the fetch is served without one (session id 0), as Kafka does.
	fresh := tn.dial()
	req := sessionFetch(0, 0, map[int32]int64{0: 0})
	req.SetVersion(12)
	got, err := fresh.recv(req, fresh.send(req), bound)
	if err != nil {
		t.Fatalf("new session while %d are parked: %v", parked, err)
	}
	if r := got.(*kmsg.FetchResponse); r.ErrorCode != 0 || r.SessionID != 0 || len(answered(t, r)) != 1 {
		t.Fatalf("new session: error %d, id %d, %d partitions", r.ErrorCode, r.SessionID, len(r.Topics))
	}
	// A sessionless fetch too.
	sessionless := fetchReq("s", [16]byte{}, 0, 0)
	sessionless.SetVersion(12)
	if _, err := fresh.recv(sessionless, fresh.send(sessionless), bound); err != nil {
		t.Fatalf("sessionless fetch while %d are parked: %v", parked, err)
	}
	if time.Since(start) >= parkWait {
		t.Fatalf("the parked fetches expired before the others were served")
	}

	// An append wakes every parked fetch with the new record, and each
	// session recorded it: the parked fetches were answered by the append,
	// not by their max wait.
	produce(admin, "s", 0, "second")
	var wg sync.WaitGroup
	errs := make(chan error, parked)
	for i, f := range fetches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := f.c.recv(f.req, f.corr, bound)
			if err != nil {
				errs <- err
				return
			}
			r := got.(*kmsg.FetchResponse)
			if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 || len(r.Topics[0].Partitions[0].RecordBatches) == 0 {
				t.Errorf("parked fetch %d: error %d, topics %v", i, r.ErrorCode, r.Topics)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("parked fetch: %v", err)
	}
}

// TestFetchSessionMovedWhileParked has a second connection use a session
// while the first one's fetch in it is parked: the parked fetch, once
// woken, answers INVALID_FETCH_SESSION_EPOCH rather than misstating what
// the session sent (Kafka checks the epoch again after the wait), and the
// session stays usable at its new epoch.
func TestFetchSessionMovedWhileParked(t *testing.T) {
	tn := startNode(t, nil)
	admin := tn.dial()
	createTopic(admin, "s", 1, nil)
	produce(admin, "s", 0, "first")

	a, b := tn.dial(), tn.dial()
	resp := do[*kmsg.FetchResponse](a, 12, sessionFetch(0, 0, map[int32]int64{0: 1}))
	id := resp.SessionID
	if resp.ErrorCode != 0 || id == 0 {
		t.Fatalf("create: error %d, id %d", resp.ErrorCode, id)
	}
	parked := sessionFetch(id, 1, nil)
	parked.MinBytes, parked.MaxWaitMillis = 1, 30_000
	parked.SetVersion(12)
	corr := a.send(parked)

	// The session moves on through the other connection (epoch 1 was
	// taken by the parked fetch, so the next is 2).
	within(t, 10*time.Second, "the parked fetch to take its epoch", func() bool {
		r := do[*kmsg.FetchResponse](b, 12, sessionFetch(id, 2, nil))
		return r.ErrorCode == 0
	})
	produce(admin, "s", 0, "second")
	got, err := a.recv(parked, corr, 20*time.Second)
	if err != nil {
		t.Fatalf("parked fetch: %v", err)
	}
	if r := got.(*kmsg.FetchResponse); r.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("parked fetch after its session moved: error %d, want INVALID_FETCH_SESSION_EPOCH", r.ErrorCode)
	}
	if r := do[*kmsg.FetchResponse](b, 12, sessionFetch(id, 3, nil)); r.ErrorCode != 0 {
		t.Fatalf("the session at its new epoch: error %d", r.ErrorCode)
	}
}
