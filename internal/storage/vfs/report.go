package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// Reporting wraps an FS so that every failed operation that means the disk
// is failing is passed to report before it is returned: Kafka takes a log
// dir offline on any IOException from a file in it, whichever code path
// met it (append, roll, flush, read, index, checkpoint). Errors that are
// normal outcomes are not reported: end of file on a read, a file that does
// not exist (remove and rename of leftovers), and a file closed under a
// reader by retention or truncation (see IsDiskError).
//
// report runs on the goroutine that met the error, possibly with the log's
// locks held, so it must not block or call back into the log.
func Reporting(inner FS, report func(op, path string, err error)) FS {
	return &reportingFS{inner: inner, report: report}
}

type reportingFS struct {
	inner  FS
	report func(op, path string, err error)
}

func (r *reportingFS) check(op, path string, err error) error {
	if err != nil && IsDiskError(err) {
		r.report(op, path, err)
	}
	return err
}

// IsDiskError reports whether err means the storage failed, as opposed to
// an expected outcome (end of file, a missing file, a closed file) or a
// name clash the caller handles (an existing file).
func IsDiskError(err error) bool {
	return err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, fs.ErrNotExist) &&
		!errors.Is(err, os.ErrClosed) && !errors.Is(err, fs.ErrExist)
}

func (r *reportingFS) OpenFile(path string, flag int, perm os.FileMode) (File, error) {
	f, err := r.inner.OpenFile(path, flag, perm)
	if err != nil {
		return nil, r.check("open", path, err)
	}
	return &reportingFile{File: f, fs: r, path: path}, nil
}

func (r *reportingFS) Rename(from, to string) error {
	return r.check("rename", from, r.inner.Rename(from, to))
}

func (r *reportingFS) Remove(path string) error {
	return r.check("remove", path, r.inner.Remove(path))
}

type reportingFile struct {
	File
	fs   *reportingFS
	path string
}

func (f *reportingFile) ReadAt(b []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(b, off)
	return n, f.fs.check("read", f.path, err)
}

func (f *reportingFile) WriteAt(b []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(b, off)
	return n, f.fs.check("write", f.path, err)
}

func (f *reportingFile) Truncate(size int64) error {
	return f.fs.check("truncate", f.path, f.File.Truncate(size))
}

func (f *reportingFile) Sync() error { return f.fs.check("sync", f.path, f.File.Sync()) }

func (f *reportingFile) Stat() (os.FileInfo, error) {
	fi, err := f.File.Stat()
	return fi, f.fs.check("stat", f.path, err)
}

func (f *reportingFile) OSFile() *os.File { return OSFile(f.File) }
