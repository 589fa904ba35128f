package storage

import (
	"errors"
	"io"
	"os"
	"sync"

	"github.com/vltava/vltava/internal/storage/vfs"
)

// indexFile is the on-disk half of a segment index (offset or time index):
// a flat array of fixed-size entries. Indexes live in memory; new entries
// reach the file only at flush, roll or close — the moral equivalent of
// Kafka's mmap'd index being written back — so the append path does no
// index I/O. That is safe because recovery rebuilds the indexes of every
// segment past the recovery point, which is exactly the set whose entries
// may not have reached disk.
//
// The file is opened only while it is written: a broker with 10,000
// partitions would otherwise hold two index descriptors per segment beside
// the segment's own and run out of file descriptors (Kafka likewise closes
// an index file once it is mapped).
//
// Thread-safety: mu serializes all file operations; it is never held while
// the owning index's entry lock is held.
type indexFile struct {
	fs        vfs.FS // the segment's file system (vfs.Reporting in a Manager)
	entrySize int
	// existed reports whether the file was there when the index was
	// opened; a segment whose index files are missing rebuilds them.
	existed bool

	mu struct {
		sync.Mutex
		path      string
		closed    bool
		persisted int // entries known to be in the file
	}
}

// openIndexFile reads an index file. A missing file is an empty index: it
// is created by its first write, so a new partition creates no empty index
// files.
func openIndexFile(fs vfs.FS, path string, entrySize int) (*indexFile, []byte, error) {
	data, err := readWholeFile(fs, path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	x := &indexFile{fs: fs, entrySize: entrySize, existed: err == nil}
	x.mu.path = path
	x.mu.persisted = len(data) / entrySize
	return x, data, nil
}

// withFileLocked opens the file, runs op on it and closes it.
func (x *indexFile) withFileLocked(op func(f vfs.File) error) error {
	if x.mu.closed {
		return os.ErrClosed
	}
	f, err := x.fs.OpenFile(x.mu.path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	err = op(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// write stores encoded entries starting at entry index first and, with
// sync, fsyncs the file.
func (x *indexFile) write(first int, encoded []byte, sync bool) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(encoded) == 0 && !sync {
		if x.mu.closed {
			return os.ErrClosed
		}
		return nil
	}
	return x.withFileLocked(func(f vfs.File) error {
		if len(encoded) > 0 {
			if _, err := f.WriteAt(encoded, int64(first*x.entrySize)); err != nil {
				return err
			}
			x.mu.persisted = first + len(encoded)/x.entrySize
		}
		if sync {
			return f.Sync()
		}
		return nil
	})
}

// persisted is the number of entries already written to the file.
func (x *indexFile) persisted() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.mu.persisted
}

// truncate cuts the file to n entries.
func (x *indexFile) truncate(n int) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	// Entries beyond persisted were never written; cutting to more than
	// that would pad the file with zero entries.
	n = min(n, x.mu.persisted)
	return x.withFileLocked(func(f vfs.File) error {
		if err := f.Truncate(int64(n * x.entrySize)); err != nil {
			return err
		}
		x.mu.persisted = n
		return nil
	})
}

func (x *indexFile) rename(path string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.fs.Rename(x.mu.path, path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	x.mu.path = path
	return nil
}

func (x *indexFile) close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.mu.closed = true
	return nil
}

// readWholeFile reads a file through fs.
func readWholeFile(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data := make([]byte, fi.Size())
	n, err := f.ReadAt(data, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return data[:n], nil
}
