package poll

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestErrReturnsOnceTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	err := Err(10*time.Second, func() error {
		if calls.Add(1) < 5 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls.Load() != 5 {
		t.Fatalf("err %v after %d calls, want nil after 5", err, calls.Load())
	}
}

func TestErrGivesUpWithTheLastStatus(t *testing.T) {
	n := 0
	err := Err(30*time.Millisecond, func() error {
		n++
		return errors.New("status " + strings.Repeat("x", n))
	})
	if err == nil || !strings.Contains(err.Error(), "not within 30ms: status x") {
		t.Fatalf("err %v", err)
	}
	if !strings.HasSuffix(err.Error(), strings.Repeat("x", n)) {
		t.Fatalf("err %v is not the last status (%d calls)", err, n)
	}
}

func TestTrueFailsTheTestWithWhatItWaitedFor(t *testing.T) {
	ft := &fakeT{}
	True(ft, 10*time.Millisecond, "the answer", func() bool { return false })
	if !strings.Contains(ft.msg, "waiting for the answer") {
		t.Fatalf("failure %q", ft.msg)
	}
}

// fakeT records Fatalf instead of stopping the test.
type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) { f.msg = fmt.Sprintf(format, args...) }
