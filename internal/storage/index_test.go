package storage

import (
	"github.com/vltava/vltava/internal/storage/vfs"
	"path/filepath"
	"testing"
)

func TestOffsetIndexLookup(t *testing.T) {
	idx, err := openOffsetIndex(vfs.OS, filepath.Join(t.TempDir(), "x.index"), 100, 1024, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.file.close()
	for _, e := range []struct{ off, pos int64 }{{105, 300}, {110, 700}, {120, 1500}} {
		idx.append(e.off, e.pos)
	}
	idx.append(115, 1000) // out of order: ignored
	tests := []struct{ target, wantOff, wantPos int64 }{
		{100, 100, 0}, {104, 100, 0}, {105, 105, 300}, {109, 105, 300},
		{110, 110, 700}, {119, 110, 700}, {120, 120, 1500}, {1 << 40, 120, 1500},
	}
	for _, tc := range tests {
		if off, pos := idx.lookup(tc.target); off != tc.wantOff || pos != tc.wantPos {
			t.Errorf("lookup(%d) = (%d,%d), want (%d,%d)", tc.target, off, pos, tc.wantOff, tc.wantPos)
		}
	}
	if err := idx.truncateTo(110); err != nil {
		t.Fatal(err)
	}
	if off, _ := idx.lookup(200); off != 105 {
		t.Errorf("after truncateTo(110) lookup(200) = %d, want 105", off)
	}
}

func TestOffsetIndexPersistsAndSanityChecks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.index")
	idx, _ := openOffsetIndex(vfs.OS, path, 0, 1024, 1<<20)
	idx.append(3, 100)
	idx.append(9, 400)
	if err := idx.flush(true); err != nil {
		t.Fatal(err)
	}
	idx.file.close()
	tests := []struct {
		name    string
		logSize int64
		wantErr bool
	}{
		{"positions inside log", 1000, false},
		{"position beyond log", 300, true},
	}
	for _, tc := range tests {
		re, err := openOffsetIndex(vfs.OS, path, 0, 1024, tc.logSize)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: err = %v", tc.name, err)
		}
		if !tc.wantErr && re.len() != 2 {
			t.Errorf("%s: loaded %d entries", tc.name, re.len())
		}
		re.file.close()
	}
}

func TestTimeIndexLookup(t *testing.T) {
	idx, err := openTimeIndex(vfs.OS, filepath.Join(t.TempDir(), "x.timeindex"), 50, 1024)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.file.close()
	idx.maybeAppend(1000, 52)
	idx.maybeAppend(1000, 55) // not larger: ignored
	idx.maybeAppend(2000, 60)
	idx.maybeAppend(1500, 61) // smaller: ignored
	tests := []struct{ ts, wantTs, wantOff int64 }{
		{999, -1, 50}, {1000, 1000, 52}, {1999, 1000, 52}, {2000, 2000, 60}, {9999, 2000, 60},
	}
	for _, tc := range tests {
		if ts, off := idx.lookup(tc.ts); ts != tc.wantTs || off != tc.wantOff {
			t.Errorf("lookup(%d) = (%d,%d), want (%d,%d)", tc.ts, ts, off, tc.wantTs, tc.wantOff)
		}
	}
}

func TestOffsetForTimestampAndMaxTimestamp(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	defer l.Close()
	// 60 batches of 3 records; batch i has timestamps 1000+10i, +1, +2,
	// except batch 20 which goes back in time and batch 30 which jumps ahead.
	for i := 0; i < 60; i++ {
		tb := testBatch{records: 3, firstTs: int64(1000 + 10*i), tsStep: 1, valueSize: 30}
		switch i {
		case 20:
			tb.timestamps = []int64{500, 501, 502}
		case 30:
			tb.timestamps = []int64{1300, 9000, 1302}
		}
		mustAppend(t, l, tb.build(), int32(i/20))
	}
	tests := []struct {
		name      string
		ts        int64
		wantOff   int64
		wantTs    int64
		wantEpoch int32
		wantOK    bool
	}{
		{"before everything", 0, 0, 1000, 0, true},
		{"exact first", 1000, 0, 1000, 0, true},
		{"middle of a batch", 1011, 4, 1011, 0, true},
		{"between batches", 1015, 6, 1020, 0, true},
		{"out-of-order batch is skipped", 1195, 63, 1210, 1, true}, // batch 20 is at 500
		{"jump inside a batch", 2000, 91, 9000, 1, true},
		{"beyond everything", 10000, -1, -1, -1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			off, ts, ep, ok := l.OffsetForTimestamp(tc.ts)
			if off != tc.wantOff || ts != tc.wantTs || ep != tc.wantEpoch || ok != tc.wantOK {
				t.Fatalf("OffsetForTimestamp(%d) = (%d, %d, %d, %v), want (%d, %d, %d, %v)", tc.ts, off, ts, ep, ok, tc.wantOff, tc.wantTs, tc.wantEpoch, tc.wantOK)
			}
		})
	}
	if off, ts, ep := l.MaxTimestampOffset(); off != 91 || ts != 9000 || ep != 1 {
		t.Fatalf("MaxTimestampOffset = (%d, %d, %d), want (91, 9000, 1)", off, ts, ep)
	}
	if l.NumSegments() < 3 {
		t.Fatalf("test meant to span segments, has %d", l.NumSegments())
	}
}

func TestMaxTimestampOffsetEmptyLog(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	defer l.Close()
	if off, ts, ep := l.MaxTimestampOffset(); off != -1 || ts != -1 || ep != -1 {
		t.Fatalf("got (%d, %d, %d)", off, ts, ep)
	}
}
