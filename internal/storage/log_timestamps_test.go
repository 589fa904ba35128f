package storage

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vltava/vltava/internal/record"
)

// timestampCodecs are the codecs the timestamp lookups must see through.
var timestampCodecs = []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}

// storedRecord is the model of one record for brute-force expectations.
type storedRecord struct {
	offset, ts int64
	epoch      int32
}

// timestampFixture appends 40 batches of 4 records to a log with small
// segments. Batch k starts at offset 4k with leader epoch k/10; with
// b = 1000+10k its records carry b, b+5, b+2, b+7, so most answers lie
// inside a batch, after its first record. Exceptions:
//   - batch 10 is LogAppendTime at 1108: all its records read as 1108;
//   - batches 20 and 30 hold a spike of 99999 (at offsets 81 and 123), the
//     first of which is the log's max timestamp record.
func timestampFixture(t *testing.T, codec record.Codec) (*Log, []storedRecord, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	cfg.IndexIntervalBytes = 128
	l := openTestLog(t, dir, cfg, OpenOptions{})
	var model []storedRecord
	for k := range 40 {
		b := int64(1000 + 10*k)
		tb := testBatch{records: 4, timestamps: []int64{b, b + 5, b + 2, b + 7}, valueSize: 60, codec: codec}
		switch k {
		case 10:
			tb.attributes, tb.maxTs = 0x08, 1108 // LogAppendTime
		case 20:
			tb.timestamps = []int64{b, 99999, b + 2, b + 7}
		case 30:
			tb.timestamps = []int64{b, b + 1, b + 2, 99999}
		}
		epoch := int32(k / 10)
		info := mustAppend(t, l, tb.build(), epoch)
		for i, ts := range tb.timestamps {
			if k == 10 {
				ts = 1108
			}
			model = append(model, storedRecord{offset: info.BaseOffset + int64(i), ts: ts, epoch: epoch})
		}
	}
	if l.NumSegments() < 3 {
		t.Fatalf("%s: fixture meant to span segments, has %d", codec, l.NumSegments())
	}
	return l, model, dir
}

// modelOffsetForTimestamp is KIP-79 by brute force: the first record, by
// offset, at or after lso with a timestamp >= ts.
func modelOffsetForTimestamp(model []storedRecord, ts, lso int64) (storedRecord, bool) {
	for _, r := range model {
		if r.offset >= lso && r.ts >= ts {
			return r, true
		}
	}
	return storedRecord{}, false
}

func TestOffsetForTimestampFindsRecordInsideCompressedBatches(t *testing.T) {
	tests := []struct {
		name      string
		ts        int64
		lso       int64 // DeleteRecordsBefore this first (cases ordered by it)
		wantOff   int64
		wantTs    int64
		wantEpoch int32
		wantOK    bool
	}{
		{"before everything: first record", 0, 0, 0, 1000, 0, true},
		{"exact first record of a batch", 1050, 0, 20, 1050, 0, true},
		{"second record of a batch", 1051, 0, 21, 1055, 0, true},
		{"record after an older one in the same batch", 1056, 0, 23, 1057, 0, true},
		{"between batches: next batch's first record", 1058, 0, 24, 1060, 0, true},
		{"LogAppendTime batch: every record has MaxTimestamp", 1101, 0, 40, 1108, 1, true},
		{"after LogAppendTime batch's time", 1109, 0, 44, 1110, 1, true},
		{"spike in the middle of a batch", 5000, 0, 81, 99999, 2, true},
		{"exactly the max", 99999, 0, 81, 99999, 2, true},
		{"beyond every timestamp", 100000, 0, -1, -1, -1, false},
		{"log start offset inside a batch", 1000, 22, 22, 1052, 0, true},
		{"log start offset cuts the matching record", 1056, 22, 23, 1057, 0, true},
		{"log start offset past the first spike", 5000, 100, 123, 99999, 3, true},
	}
	for _, codec := range timestampCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			// One log per codec; the cases are ordered by log start offset,
			// which only moves forward.
			l, _, _ := timestampFixture(t, codec)
			defer l.Close()
			for _, tc := range tests {
				if tc.lso > l.LogStartOffset() {
					l.SetHighWatermark(l.LogEndOffset())
					if _, err := l.DeleteRecordsBefore(tc.lso); err != nil {
						t.Fatal(err)
					}
				}
				off, ts, ep, ok := l.OffsetForTimestamp(tc.ts)
				if off != tc.wantOff || ts != tc.wantTs || ep != tc.wantEpoch || ok != tc.wantOK {
					t.Errorf("%s: OffsetForTimestamp(%d) = (%d, %d, %d, %v), want (%d, %d, %d, %v)",
						tc.name, tc.ts, off, ts, ep, ok, tc.wantOff, tc.wantTs, tc.wantEpoch, tc.wantOK)
				}
			}
		})
	}
}

// TestTimestampLookupsMatchBruteForce checks every interesting timestamp
// against the model, before and after a clean restart (indexes read back
// from disk) and an unclean one (indexes rebuilt).
func TestTimestampLookupsMatchBruteForce(t *testing.T) {
	for _, codec := range []record.Codec{record.CodecGzip, record.CodecLZ4, record.CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			l, model, dir := timestampFixture(t, codec)
			cfg := l.Config()
			check := func(stage string) {
				t.Helper()
				lso := l.LogStartOffset()
				for ts := int64(990); ts <= 1410; ts++ {
					want, wantOK := modelOffsetForTimestamp(model, ts, lso)
					off, gotTs, ep, ok := l.OffsetForTimestamp(ts)
					if ok != wantOK || (ok && (off != want.offset || gotTs != want.ts || ep != want.epoch)) {
						t.Fatalf("%s: OffsetForTimestamp(%d) = (%d, %d, %d, %v), want %+v found=%v", stage, ts, off, gotTs, ep, ok, want, wantOK)
					}
				}
				if off, ts, ep := l.MaxTimestampOffset(); off != 81 || ts != 99999 || ep != 2 {
					t.Fatalf("%s: MaxTimestampOffset = (%d, %d, %d), want (81, 99999, 2): first of two equal maxima", stage, off, ts, ep)
				}
			}
			check("fresh")
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openTestLog(t, dir, cfg, OpenOptions{CleanShutdown: true})
			check("clean restart")
			crash(l)
			l = openTestLog(t, dir, cfg, OpenOptions{})
			check("unclean restart")
			l.SetHighWatermark(l.LogEndOffset())
			if _, err := l.DeleteRecordsBefore(57); err != nil {
				t.Fatal(err)
			}
			check("after DeleteRecords")
			l.Close()
		})
	}
}

func TestMaxTimestampOffset(t *testing.T) {
	tests := []struct {
		name      string
		batches   []testBatch
		wantOff   int64
		wantTs    int64
		wantEpoch int32
	}{
		{
			name:    "max inside the last compressed batch",
			batches: []testBatch{{records: 3, firstTs: 10, tsStep: 1}, {records: 4, timestamps: []int64{20, 50, 30, 40}}},
			wantOff: 4, wantTs: 50, wantEpoch: 7,
		},
		{
			name:    "earliest of equal maxima across batches",
			batches: []testBatch{{records: 2, timestamps: []int64{1, 90}}, {records: 2, timestamps: []int64{90, 5}}},
			wantOff: 1, wantTs: 90, wantEpoch: 7,
		},
		{
			name:    "LogAppendTime batch: its first record",
			batches: []testBatch{{records: 2, firstTs: 10, tsStep: 1}, {records: 3, timestamps: []int64{1, 2, 3}, attributes: 0x08, maxTs: 500}},
			wantOff: 2, wantTs: 500, wantEpoch: 7,
		},
		{
			name:    "no leader epoch on the batch",
			batches: []testBatch{{records: 2, timestamps: []int64{8, 9}, leaderEpoch: -1}},
			wantOff: 1, wantTs: 9, wantEpoch: -1,
		},
	}
	for _, codec := range timestampCodecs {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s/%s", codec, tc.name), func(t *testing.T) {
				l := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
				defer l.Close()
				for _, tb := range tc.batches {
					tb.codec = codec
					epoch := int32(7)
					if tb.leaderEpoch < 0 {
						epoch = -1
					}
					mustAppend(t, l, tb.build(), epoch)
				}
				if off, ts, ep := l.MaxTimestampOffset(); off != tc.wantOff || ts != tc.wantTs || ep != tc.wantEpoch {
					t.Fatalf("MaxTimestampOffset = (%d, %d, %d), want (%d, %d, %d)", off, ts, ep, tc.wantOff, tc.wantTs, tc.wantEpoch)
				}
			})
		}
	}
}

// TestOffsetForTimestampRandomized cross-checks random logs (random codecs,
// timestamps out of order within and across batches) against brute force.
func TestOffsetForTimestampRandomized(t *testing.T) {
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 99))
		cfg := testConfig()
		cfg.SegmentBytes = 2048
		cfg.IndexIntervalBytes = 100
		l := openTestLog(t, t.TempDir(), cfg, OpenOptions{})
		var model []storedRecord
		for range 80 {
			n := 1 + rng.IntN(6)
			ts := make([]int64, n)
			for i := range ts {
				ts[i] = 1000 + rng.Int64N(2000)
			}
			codec := timestampCodecs[rng.IntN(len(timestampCodecs))]
			info := mustAppend(t, l, testBatch{records: n, timestamps: ts, valueSize: rng.IntN(50), codec: codec}.build(), 1)
			for i := range ts {
				model = append(model, storedRecord{offset: info.BaseOffset + int64(i), ts: ts[i], epoch: 1})
			}
		}
		for range 300 {
			q := 990 + rng.Int64N(2020)
			want, wantOK := modelOffsetForTimestamp(model, q, 0)
			off, ts, _, ok := l.OffsetForTimestamp(q)
			if ok != wantOK || (ok && (off != want.offset || ts != want.ts)) {
				t.Fatalf("seed %d: OffsetForTimestamp(%d) = (%d, %d, %v), want %+v found=%v", seed, q, off, ts, ok, want, wantOK)
			}
		}
		l.Close()
	}
}

func TestEpochForOffset(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	defer l.Close()
	for _, epoch := range []int32{0, 0, 2, 2, 5} { // offsets 0-4, 5-9, 10-14, 15-19, 20-24
		mustAppend(t, l, simple(5, 10, 1), epoch)
	}
	check := func(stage string, tests []struct {
		offset int64
		want   int32
	}) {
		t.Helper()
		for _, tc := range tests {
			if got := l.EpochForOffset(tc.offset); got != tc.want {
				t.Errorf("%s: EpochForOffset(%d) = %d, want %d", stage, tc.offset, got, tc.want)
			}
		}
	}
	check("full log", []struct {
		offset int64
		want   int32
	}{
		{0, 0}, {9, 0}, {10, 2}, {19, 2}, {20, 5}, {24, 5},
		{25, 5},  // the log end offset: the latest epoch
		{26, -1}, // beyond the log end
		{-1, -1},
	})
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.DeleteRecordsBefore(12); err != nil {
		t.Fatal(err)
	}
	check("after DeleteRecords", []struct {
		offset int64
		want   int32
	}{
		{5, -1}, // below the log start offset
		{12, 2}, // the earliest offset keeps its epoch
		{22, 5},
	})

	empty := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	defer empty.Close()
	mustAppend(t, empty, simple(1, 1, 1), -1) // a batch without a leader epoch
	if got := empty.EpochForOffset(0); got != -1 {
		t.Fatalf("EpochForOffset on a log without epochs = %d, want -1", got)
	}
}
