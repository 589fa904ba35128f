// Package poll is for tests that wait for a condition another goroutine or
// process brings about: the condition is checked until it holds or a
// deadline passes, never slept on for a fixed time. Checks start 1 ms apart
// and back off to 100 ms, so a condition met at once costs nothing and a
// long wait does not spin.
package poll

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

const (
	firstInterval = time.Millisecond
	maxInterval   = 100 * time.Millisecond
)

// Err checks cond until it returns nil, or returns cond's last error once
// timeout has passed. It does not need a test, so a goroutine or a helper
// that reports its own status can use it.
func Err(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	interval := firstInterval
	for {
		err := cond()
		if err == nil {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("not within %v: %w", timeout, err)
		}
		time.Sleep(min(interval, left))
		interval = min(2*interval, maxInterval)
	}
}

// Until checks cond until it returns nil; once timeout has passed the test
// fails, naming what it waited for and cond's last error.
func Until(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	if err := Err(timeout, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// errNotYet is the status of a bool condition that does not hold yet.
var errNotYet = errors.New("condition not met")

// True is Until for a condition without a status of its own.
func True(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Until(t, timeout, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}
