package storage

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// modelBatch is one batch as the in-memory model expects to read it back.
type modelBatch struct {
	base, last int64
	data       []byte
}

// logModel is the obviously-correct reference: a slice of batches plus the
// log start and end offsets.
type logModel struct {
	batches  []modelBatch
	lso, leo int64
}

func (m *logModel) visibleFrom(offset int64) []modelBatch {
	for i, b := range m.batches {
		if b.last >= offset {
			return m.batches[i:]
		}
	}
	return nil
}

// TestRandomizedAgainstModel drives appends, reads, reopens (clean and
// crash), truncations and DeleteRecords against a real log and a model.
func TestRandomizedAgainstModel(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed*7919))
		dir := t.TempDir()
		cfg := testConfig()
		cfg.SegmentBytes = int64(600 + rng.IntN(2000))
		cfg.IndexIntervalBytes = int32(rng.IntN(400))
		l := openTestLog(t, dir, cfg, OpenOptions{})
		m := &logModel{}
		for step := 0; step < 400; step++ {
			switch op := rng.IntN(100); {
			case op < 55: // append
				n := 1 + rng.IntN(4)
				b := simple(n, rng.IntN(120), int64(step))
				info := mustAppend(t, l, b, int32(step/50))
				if info.BaseOffset != m.leo {
					t.Fatalf("seed %d step %d: appended at %d, model LEO %d", seed, step, info.BaseOffset, m.leo)
				}
				m.batches = append(m.batches, modelBatch{base: info.BaseOffset, last: info.LastOffset, data: append([]byte(nil), b...)})
				m.leo = info.LastOffset + 1
			case op < 80: // read
				if m.leo == m.lso {
					continue
				}
				off := m.lso + rng.Int64N(m.leo-m.lso+1)
				maxBytes := 1 + rng.IntN(3000)
				minOne := rng.IntN(2) == 0
				res, err := l.Read(off, maxBytes, m.leo, minOne)
				if err != nil {
					t.Fatalf("seed %d step %d: Read(%d): %v", seed, step, off, err)
				}
				var want []byte
				for i, b := range m.visibleFrom(off) {
					if len(want)+len(b.data) > maxBytes && !(i == 0 && minOne) {
						break
					}
					want = append(want, b.data...)
				}
				// Like Kafka, one Read serves one segment: the result is the
				// model's answer or a prefix of it ending at a segment end.
				short := len(res.Data) < len(want) && len(res.Data) > 0 && !l.isSegmentBase(nextBase(res.Data))
				if !bytes.HasPrefix(want, res.Data) || (len(want) > 0 && len(res.Data) == 0) || short {
					t.Fatalf("seed %d step %d: Read(%d, %d, minOne=%v) returned %d bytes, model %d", seed, step, off, maxBytes, minOne, len(res.Data), len(want))
				}
			case op < 88: // reopen
				clean := rng.IntN(2) == 0
				opts := OpenOptions{CleanShutdown: clean, RecoveryPoint: l.RecoveryPoint(), LogStartOffset: l.LogStartOffset(), HighWatermark: l.HighWatermark()}
				if clean {
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
				} else {
					crash(l)
				}
				l = openTestLog(t, dir, cfg, opts)
			case op < 95: // truncate at a batch boundary, or below the log start
				var to int64
				if rng.IntN(6) == 0 && m.lso > 0 {
					to = rng.Int64N(m.lso)
					m.batches, m.lso, m.leo = nil, to, to
				} else {
					var cands []int64
					for _, b := range m.batches {
						if b.base >= m.lso {
							cands = append(cands, b.base)
						}
					}
					if len(cands) == 0 {
						continue
					}
					to = cands[rng.IntN(len(cands))]
					keep := 0
					for keep < len(m.batches) && m.batches[keep].base < to {
						keep++
					}
					m.batches, m.leo = m.batches[:keep], to
				}
				if err := l.Truncate(to); err != nil {
					t.Fatalf("seed %d step %d: Truncate(%d): %v", seed, step, to, err)
				}
			default: // DeleteRecords
				l.SetHighWatermark(m.leo)
				if m.leo == m.lso {
					continue
				}
				to := m.lso + rng.Int64N(m.leo-m.lso+1)
				if _, err := l.DeleteRecordsBefore(to); err != nil {
					t.Fatalf("seed %d step %d: DeleteRecordsBefore(%d): %v", seed, step, to, err)
				}
				m.lso = to
			}
			if l.LogEndOffset() != m.leo || l.LogStartOffset() != m.lso {
				t.Fatalf("seed %d step %d: log [%d, %d), model [%d, %d)", seed, step, l.LogStartOffset(), l.LogEndOffset(), m.lso, m.leo)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// nextBase is the offset following the last batch in data.
func nextBase(data []byte) int64 {
	var next int64
	for len(data) > 0 {
		h, _ := parseStoredHeader(data)
		next = h.LastOffset() + 1
		data = data[h.TotalSize():]
	}
	return next
}

func (l *Log) isSegmentBase(off int64) bool {
	for _, s := range l.segmentList() {
		if s.baseOffset == off {
			return true
		}
	}
	return false
}
