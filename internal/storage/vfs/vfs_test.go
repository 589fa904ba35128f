package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// TestFaultyFailsOnlyUnderFailingDirs: operations under a failing dir
// fail with EIO, even on files opened before; other dirs are untouched;
// the real file is handed out for sendfile only while healthy.
func TestFaultyFailsOnlyUnderFailingDirs(t *testing.T) {
	root := t.TempDir()
	bad, good := filepath.Join(root, "bad"), filepath.Join(root, "bad2")
	for _, d := range []string{bad, good} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fs := NewFaulty(OS)
	fb, err := fs.OpenFile(filepath.Join(bad, "x.log"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fg, err := fs.OpenFile(filepath.Join(good, "x.log"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if OSFile(fb) == nil {
		t.Fatal("no *os.File from a healthy faulty file")
	}
	fs.SetFailing(bad)
	if _, err := fb.WriteAt([]byte("abcd"), 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("write under a failing dir: %v, want EIO", err)
	}
	if err := fb.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync under a failing dir: %v, want EIO", err)
	}
	if OSFile(fb) != nil {
		t.Fatal("a failing file handed out its *os.File")
	}
	if _, err := fs.OpenFile(filepath.Join(bad, "y.log"), os.O_CREATE|os.O_RDWR, 0o644); !errors.Is(err, syscall.EIO) {
		t.Fatalf("open under a failing dir: %v", err)
	}
	// "bad2" shares the prefix "bad" but is another dir.
	if _, err := fg.WriteAt([]byte("abcd"), 0); err != nil {
		t.Fatalf("write in a healthy dir: %v", err)
	}
	fs.SetFailing()
	if _, err := fb.WriteAt([]byte("abcd"), 0); err != nil {
		t.Fatalf("write after healing: %v", err)
	}
}

// TestReportingReportsDiskErrorsOnly: EOF, missing files and closed files
// are normal outcomes; an injected EIO is reported.
func TestReportingReportsDiskErrorsOnly(t *testing.T) {
	dir := t.TempDir()
	faulty := NewFaulty(OS)
	var mu sync.Mutex
	var reported []string
	fs := Reporting(faulty, func(op, path string, err error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, op)
	})
	f, err := fs.OpenFile(filepath.Join(dir, "x.log"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(make([]byte, 4), 0); err == nil {
		t.Fatal("read past the end succeeded")
	}
	if err := fs.Remove(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("remove of a missing file: %v", err)
	}
	if len(reported) != 0 {
		t.Fatalf("normal outcomes reported as disk errors: %v", reported)
	}
	faulty.SetFailing(dir)
	if _, err := f.WriteAt([]byte("x"), 0); err == nil {
		t.Fatal("injected write failure not returned")
	}
	if len(reported) != 1 || reported[0] != "write" {
		t.Fatalf("reported %v, want [write]", reported)
	}
	faulty.SetFailing()
	f.Close()
	if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("read of a closed file: %v", err)
	}
	if len(reported) != 1 {
		t.Fatalf("a closed file reported as a disk error: %v", reported)
	}
}
