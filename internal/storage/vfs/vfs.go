// Package vfs is the narrow file-system interface the log's segment files
// go through: the real operating system by default, and two wrappers — one
// that reports every I/O error of a log dir (so the dir can be taken
// offline, Kafka's LogDirFailureChannel) and one that injects faults, for
// tests and the test hook of the running binary (fault.go).
//
// The interface costs one interface call per operation and nothing per
// append beyond it; the OS implementation hands out *os.File itself so
// fetches can still be sent with sendfile (see OSFile).
package vfs

import (
	"io"
	"os"
)

// File is what the log needs of an open segment file.
type File interface {
	io.ReaderAt
	io.WriterAt
	Truncate(size int64) error
	Sync() error
	Stat() (os.FileInfo, error)
	Close() error
}

// FS opens, renames and removes files.
type FS interface {
	OpenFile(path string, flag int, perm os.FileMode) (File, error)
	Rename(from, to string) error
	Remove(path string) error
}

// OS is the operating system's file system.
var OS FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(path string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err // not a typed nil *os.File
	}
	return f, nil
}

func (osFS) Rename(from, to string) error { return os.Rename(from, to) }
func (osFS) Remove(path string) error     { return os.Remove(path) }

// osFiler is implemented by wrappers that can hand out the *os.File under
// them, for sendfile.
type osFiler interface {
	OSFile() *os.File
}

// OSFile returns the *os.File behind f, or nil when f has none (or, for
// the fault-injecting layer, when its faults are on, so reads go through
// ReadAt and fail as injected).
func OSFile(f File) *os.File {
	switch f := f.(type) {
	case *os.File:
		return f
	case osFiler:
		return f.OSFile()
	}
	return nil
}
