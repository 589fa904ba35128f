package lag

import (
	"encoding/json"
	"time"
)

// Status is a Burrow status, for a partition or a group. The numbers are
// Burrow's, so kafka_consumergroup_status reads as Burrow's status codes.
type Status int8

const (
	StatusNotFound Status = 0
	StatusOK       Status = 1
	StatusWarn     Status = 2
	StatusErr      Status = 3
	StatusStop     Status = 4
	StatusStall    Status = 5
	StatusRewind   Status = 6
)

var statusNames = [...]string{"NOTFOUND", "OK", "WARN", "ERR", "STOP", "STALL", "REWIND"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "UNKNOWN"
}

// MarshalJSON writes the status by name, as Burrow's HTTP API.
func (s Status) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads a status name.
func (s *Status) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return err
	}
	for i, n := range statusNames {
		if n == name {
			*s = Status(i)
			return nil
		}
	}
	*s = StatusNotFound
	return nil
}

// sample is one observation of a group's partition.
type sample struct {
	at     time.Time
	offset int64
	lag    int64
}

// windowSize is the number of samples the rules look at, as Burrow's
// default intervals=10.
const windowSize = 10

// evaluate applies Burrow's consumer rules to a partition's window, oldest
// sample first (github.com/linkedin/Burrow/wiki/Consumer-Lag-Evaluation-Rules):
//
//  1. any sample with zero lag: OK (the consumer caught up in the window);
//  2. the committed offset went backwards: REWIND;
//  3. the time since the last offset change is longer than the window's
//     span of offsets (commits stopped): STOP;
//  4. the offset did not move over the window and lag stayed or grew:
//     STALL (the consumer is alive but stuck);
//  5. offsets move but lag grew at every sample: WARN (falling behind);
//  6. otherwise OK.
//
// Burrow dates each sample by its commit; the sampler dates it by when it
// saw the committed offset change, which is at most one interval later.
func evaluate(w []sample, now time.Time) Status {
	if len(w) == 0 {
		return StatusNotFound
	}
	for _, s := range w {
		if s.lag == 0 {
			return StatusOK
		}
	}
	for i := 1; i < len(w); i++ {
		if w[i].offset < w[i-1].offset {
			return StatusRewind
		}
	}
	if len(w) < 2 {
		return StatusOK
	}
	first, last := w[0], w[len(w)-1]
	// When did the committed offset last change?
	changed := first.at
	for i := 1; i < len(w); i++ {
		if w[i].offset != w[i-1].offset {
			changed = w[i].at
		}
	}
	if first.offset != last.offset && now.Sub(changed) > changed.Sub(first.at) && len(w) == windowSize {
		return StatusStop
	}
	if first.offset == last.offset {
		if last.lag >= first.lag && len(w) == windowSize {
			return StatusStall
		}
		return StatusOK
	}
	growing := true
	for i := 1; i < len(w); i++ {
		if w[i].lag <= w[i-1].lag {
			growing = false
			break
		}
	}
	if growing {
		return StatusWarn
	}
	return StatusOK
}

// groupStatus is Burrow's group status from its partitions' statuses: ERR
// if any partition is STOP, STALL or REWIND, WARN if any is WARN, else OK.
func groupStatus(parts []PartitionLag) Status {
	st := StatusOK
	for _, p := range parts {
		switch p.Status {
		case StatusStop, StatusStall, StatusRewind, StatusErr:
			return StatusErr
		case StatusWarn:
			st = StatusWarn
		}
	}
	return st
}
