package lag

import (
	"testing"
	"time"
)

// window builds a full window, one sample a second ending at now, from
// (offset, lag) pairs.
func window(now time.Time, pairs ...[2]int64) []sample {
	var w []sample
	for i, p := range pairs {
		w = append(w, sample{at: now.Add(time.Duration(i-len(pairs)+1) * time.Second), offset: p[0], lag: p[1]})
	}
	return w
}

func repeat(n int, f func(i int) [2]int64) [][2]int64 {
	var out [][2]int64
	for i := 0; i < n; i++ {
		out = append(out, f(i))
	}
	return out
}

func TestBurrowRules(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	cases := []struct {
		name string
		w    []sample
		at   time.Time
		want Status
	}{
		{"caught up once in the window", window(now, repeat(10, func(i int) [2]int64 { return [2]int64{int64(i * 10), int64(i % 5)} })...), now, StatusOK},
		{"committing and keeping up", window(now, repeat(10, func(i int) [2]int64 { return [2]int64{int64(i * 10), 5 + int64(i%2)} })...), now, StatusOK},
		{"committing but falling behind", window(now, repeat(10, func(i int) [2]int64 { return [2]int64{int64(i * 10), int64(10 + i*5)} })...), now, StatusWarn},
		{"not committing with lag", window(now, repeat(10, func(i int) [2]int64 { return [2]int64{100, int64(10 + i)} })...), now, StatusStall},
		{"commits stopped long ago", window(now, repeat(10, func(i int) [2]int64 { return [2]int64{int64(min(i, 2) * 10), int64(10 + i)} })...), now.Add(time.Hour), StatusStop},
		{"offset went back", window(now, [2]int64{50, 5}, [2]int64{40, 15}), now, StatusRewind},
		{"no samples", nil, now, StatusNotFound},
		{"one sample with lag", window(now, [2]int64{5, 3}), now, StatusOK},
	}
	for _, c := range cases {
		if got := evaluate(c.w, c.at); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestGroupStatusIsTheWorstPartition(t *testing.T) {
	if s := groupStatus([]PartitionLag{{Status: StatusOK}, {Status: StatusWarn}}); s != StatusWarn {
		t.Errorf("OK+WARN: %v", s)
	}
	if s := groupStatus([]PartitionLag{{Status: StatusWarn}, {Status: StatusStall}}); s != StatusErr {
		t.Errorf("WARN+STALL: %v", s)
	}
	if s := groupStatus(nil); s != StatusOK {
		t.Errorf("no partitions: %v", s)
	}
}
