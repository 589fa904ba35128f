package vfs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// FaultTriggerFileEnv names the test hook of the running binary: when the
// environment variable is set to a file path, the node's storage goes
// through a Faulty file system that re-reads that file every
// FaultTriggerPollInterval; each non-empty line names a directory under
// which every file operation from then on fails with EIO, as a dying disk
// would. Root ignores permission bits, so removing a directory's
// permissions cannot make a test's log dir fail; this can. It is never set
// in production.
const FaultTriggerFileEnv = "VLTAVA_TEST_FAULT_TRIGGER_FILE"

// FaultTriggerPollInterval is how often the trigger file is read.
const FaultTriggerPollInterval = 50 * time.Millisecond

// ErrInjected is the error of an injected fault: EIO, so callers see what a
// failing disk returns.
var ErrInjected error = syscall.EIO

// Faulty is a fault-injecting FS over another: operations on paths under a
// failing directory return ErrInjected (a write first writes half of its
// buffer, as a torn write leaves). Files opened before a directory started
// failing fail too, since every operation checks the path.
//
// Thread-safety: safe for concurrent use; the set of failing directories
// is an immutable slice swapped atomically, so a check is one atomic load
// (and nothing else while no directory fails).
type Faulty struct {
	inner   FS
	failing atomic.Pointer[[]string] // cleaned directory paths
}

// NewFaulty returns a fault-injecting FS over inner with no faults on.
func NewFaulty(inner FS) *Faulty {
	f := &Faulty{inner: inner}
	f.failing.Store(&[]string{})
	return f
}

// SetFailing replaces the set of failing directories.
func (f *Faulty) SetFailing(dirs ...string) {
	clean := make([]string, 0, len(dirs))
	for _, d := range dirs {
		clean = append(clean, filepath.Clean(d))
	}
	f.failing.Store(&clean)
}

// Fails reports whether operations on path fail.
func (f *Faulty) Fails(path string) bool {
	dirs := *f.failing.Load()
	if len(dirs) == 0 {
		return false
	}
	path = filepath.Clean(path)
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

func (f *Faulty) fault(op, path string) error {
	return &os.PathError{Op: op, Path: path, Err: ErrInjected}
}

func (f *Faulty) OpenFile(path string, flag int, perm os.FileMode) (File, error) {
	if f.Fails(path) {
		return nil, f.fault("open", path)
	}
	file, err := f.inner.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: file, fs: f, path: path}, nil
}

func (f *Faulty) Rename(from, to string) error {
	if f.Fails(from) || f.Fails(to) {
		return f.fault("rename", from)
	}
	return f.inner.Rename(from, to)
}

func (f *Faulty) Remove(path string) error {
	if f.Fails(path) {
		return f.fault("remove", path)
	}
	return f.inner.Remove(path)
}

// WatchTriggerFile re-reads path every interval until stop is closed and
// makes the directories it lists fail (see FaultTriggerFileEnv). A missing
// file means no faults.
func (f *Faulty) WatchTriggerFile(path string, interval time.Duration, stop <-chan struct{}) {
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		var last []byte
		for {
			data, err := os.ReadFile(path)
			if err != nil {
				data = nil
			}
			if !bytes.Equal(data, last) {
				last = data
				var dirs []string
				sc := bufio.NewScanner(bytes.NewReader(data))
				for sc.Scan() {
					if line := strings.TrimSpace(sc.Text()); line != "" {
						dirs = append(dirs, line)
					}
				}
				f.SetFailing(dirs...)
				if len(dirs) > 0 {
					fmt.Fprintf(os.Stderr, "test hook %s: injecting I/O faults under %s\n", FaultTriggerFileEnv, strings.Join(dirs, ", "))
				}
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
}

type faultyFile struct {
	File
	fs   *Faulty
	path string
}

func (f *faultyFile) ReadAt(b []byte, off int64) (int, error) {
	if f.fs.Fails(f.path) {
		return 0, f.fs.fault("read", f.path)
	}
	return f.File.ReadAt(b, off)
}

func (f *faultyFile) WriteAt(b []byte, off int64) (int, error) {
	if f.fs.Fails(f.path) {
		n, _ := f.File.WriteAt(b[:len(b)/2], off)
		return n, f.fs.fault("write", f.path)
	}
	return f.File.WriteAt(b, off)
}

func (f *faultyFile) Truncate(size int64) error {
	if f.fs.Fails(f.path) {
		return f.fs.fault("truncate", f.path)
	}
	return f.File.Truncate(size)
}

func (f *faultyFile) Sync() error {
	if f.fs.Fails(f.path) {
		return f.fs.fault("sync", f.path)
	}
	return f.File.Sync()
}

func (f *faultyFile) Stat() (os.FileInfo, error) {
	if f.fs.Fails(f.path) {
		return nil, f.fs.fault("stat", f.path)
	}
	return f.File.Stat()
}

// OSFile hands out the real file only while this file's directory is
// healthy, so a fetch from a failing one reads through ReadAt and fails.
func (f *faultyFile) OSFile() *os.File {
	if f.fs.Fails(f.path) {
		return nil
	}
	return OSFile(f.File)
}
