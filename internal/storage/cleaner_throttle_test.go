package storage

import (
	"fmt"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/record"
)

// The throttle holds the cleaner to log.cleaner.io.max.bytes.per.second:
// 10 MiB of I/O at 1 MiB/s, counted in 64 KiB steps of 10 ms each, sleeps
// about ten seconds in total (measured on a fake clock); no limit, no sleep.
func TestCleanerIOThrottle(t *testing.T) {
	if newIOThrottle(1.7976931348623157e308) != nil || newIOThrottle(0) != nil {
		t.Fatal("Kafka's default (Double.MAX_VALUE) or 0 must not throttle")
	}
	const rate = 1 << 20
	th := newIOThrottle(rate)
	clock := time.Unix(0, 0)
	var slept time.Duration
	th.now = func() time.Time { return clock }
	th.sleep = func(d time.Duration, _ <-chan struct{}) { slept += d; clock = clock.Add(d) }
	th.mu.periodStart = clock
	const step, total = 64 << 10, 10 << 20
	for n := 0; n < total; n += step {
		clock = clock.Add(10 * time.Millisecond)
		th.maybeThrottle(step, nil)
	}
	spent := clock.Sub(time.Unix(0, 0))
	if want := time.Duration(total / rate * float64(time.Second)); spent < want*9/10 || spent > want*11/10 {
		t.Fatalf("10 MiB at 1 MiB/s took %v on the cleaner's clock (slept %v), want about %v", spent, slept, want)
	}
}

// log.cleaner.threads: two cleaner goroutines clean two logs at once (each
// pass here slowed by a tiny I/O limit), where one thread would take them
// one after the other.
func TestCleanerThreadsCleanLogsConcurrently(t *testing.T) {
	for _, threads := range []int{1, 2} {
		t.Run(fmt.Sprintf("threads=%d", threads), func(t *testing.T) {
			m, err := OpenManager(ManagerConfig{Dirs: []string{t.TempDir()}, Logger: quietLogger(),
				CleanerThreads: threads, CleanerIOMaxBytesPerSecond: 1, CleanerBackoff: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			cfg := compactTestConfig()
			for part := range int32(2) {
				l, err := m.GetOrCreate(TopicPartition{Topic: "c", Partition: part}, [16]byte{}, cfg)
				if err != nil {
					t.Fatal(err)
				}
				var p produced
				for i := range 100 {
					appendKeyed(t, l, &p, time.Now().UnixMilli(), record.CodecNone, kv{fmt.Sprintf("k%d", i%4), val(fmt.Sprint(i))})
				}
				l.SetHighWatermark(l.LogEndOffset())
			}
			m.Start()
			inProgress := func() int {
				m.cleaner.mu.Lock()
				defer m.cleaner.mu.Unlock()
				return len(m.cleaner.mu.inProgress)
			}
			deadline := time.Now().Add(5 * time.Second)
			for inProgress() < 1 {
				if time.Now().After(deadline) {
					t.Fatal("no cleaning started")
				}
				time.Sleep(5 * time.Millisecond) // poll interval
			}
			most := 0
			for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
				most = max(most, inProgress())
			}
			if most != threads {
				t.Fatalf("at most %d logs cleaned at once, want %d", most, threads)
			}
		})
	}
}
