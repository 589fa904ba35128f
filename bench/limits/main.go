// Command limits measures this machine's ceilings for what a broker does:
// loopback TCP throughput on one stream, sequential writes to the data dir
// with and without fdatasync, sendfile from the page cache to a socket, and
// CRC32C. The benchmark report states Vltava's throughput and CPU cost
// against these numbers.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Result is one measured ceiling.
type Result struct {
	Name   string  `json:"name"`
	MBps   float64 `json:"mb_per_s"`
	Detail string  `json:"detail,omitempty"`
}

func main() {
	dir := flag.String("dir", os.TempDir(), "directory to write test files in (use the broker's data dir's file system)")
	size := flag.Int64("bytes", 512<<20, "bytes moved per measurement")
	asJSON := flag.Bool("json", false, "print results as JSON")
	flag.Parse()

	var results []Result
	add := func(r Result, err error) {
		if err != nil {
			fmt.Fprintf(os.Stderr, "limits: %s: %v\n", r.Name, err)
			os.Exit(1)
		}
		results = append(results, r)
	}
	add(loopbackTCP(*size))
	add(sequentialWrite(*dir, *size, false))
	add(sequentialWrite(*dir, *size/4, true))
	add(sendfileFromCache(*dir, *size))
	add(crc32c(*size))
	add(partitionDirs(*dir, 2000))

	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(results)
		return
	}
	for _, r := range results {
		fmt.Printf("%-34s %9.0f MB/s  %s\n", r.Name, r.MBps, r.Detail)
	}
}

func mbps(n int64, d time.Duration) float64 { return float64(n) / 1e6 / d.Seconds() }

// loopbackTCP: one writer, one reader, 64 KiB writes.
func loopbackTCP(total int64) (Result, error) {
	r := Result{Name: "loopback TCP, one stream"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return r, err
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_, err = io.Copy(io.Discard, c)
		done <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return r, err
	}
	buf := make([]byte, 64<<10)
	start := time.Now()
	for sent := int64(0); sent < total; sent += int64(len(buf)) {
		if _, err := c.Write(buf); err != nil {
			return r, err
		}
	}
	c.Close()
	if err := <-done; err != nil {
		return r, err
	}
	r.MBps = mbps(total, time.Since(start))
	r.Detail = "64 KiB writes"
	return r, nil
}

// sequentialWrite appends 1 MiB blocks to a file; with sync, fdatasync
// after every block (what flush.messages=1 costs at best).
func sequentialWrite(dir string, total int64, sync bool) (Result, error) {
	r := Result{Name: "sequential write"}
	if sync {
		r.Name = "sequential write + fdatasync"
	}
	f, err := os.CreateTemp(dir, "limits-write-")
	if err != nil {
		return r, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	block := make([]byte, 1<<20)
	start := time.Now()
	for written := int64(0); written < total; written += int64(len(block)) {
		if _, err := f.Write(block); err != nil {
			return r, err
		}
		if sync {
			if err := syscall.Fdatasync(int(f.Fd())); err != nil {
				return r, err
			}
		}
	}
	r.MBps = mbps(total, time.Since(start))
	r.Detail = "1 MiB blocks, " + filepath.Dir(f.Name())
	if sync {
		r.Detail = "fdatasync per 1 MiB, " + filepath.Dir(f.Name())
	}
	return r, nil
}

// sendfileFromCache sends a file that is in the page cache to a loopback
// socket with sendfile (Go's TCPConn.ReadFrom uses it for *os.File).
func sendfileFromCache(dir string, total int64) (Result, error) {
	r := Result{Name: "sendfile from page cache"}
	f, err := os.CreateTemp(dir, "limits-sendfile-")
	if err != nil {
		return r, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	const fileSize = 64 << 20
	if _, err := f.Write(make([]byte, fileSize)); err != nil {
		return r, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return r, err
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_, err = io.Copy(io.Discard, c)
		done <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return r, err
	}
	start := time.Now()
	for sent := int64(0); sent < total; sent += fileSize {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return r, err
		}
		if _, err := c.(*net.TCPConn).ReadFrom(f); err != nil {
			return r, err
		}
	}
	c.Close()
	if err := <-done; err != nil {
		return r, err
	}
	r.MBps = mbps(total, time.Since(start))
	r.Detail = "64 MiB file, repeated"
	return r, nil
}

// partitionDirs creates n partition-like directories (mkdir, an empty log
// file, a small metadata file written through a rename): the file-system
// work that bounds how fast a broker creates and opens thousands of
// partitions. Reported as directories per second in the MB/s column's place.
func partitionDirs(dir string, n int) (Result, error) {
	r := Result{Name: "partition dirs created"}
	base, err := os.MkdirTemp(dir, "limits-dirs-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(base)
	start := time.Now()
	for i := 0; i < n; i++ {
		d := filepath.Join(base, fmt.Sprintf("topic-%d", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			return r, err
		}
		f, err := os.OpenFile(filepath.Join(d, "00000000000000000000.log"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return r, err
		}
		f.Close()
		tmp := filepath.Join(d, "partition.metadata.tmp")
		if err := os.WriteFile(tmp, []byte("version: 0\n"), 0o644); err != nil {
			return r, err
		}
		if err := os.Rename(tmp, filepath.Join(d, "partition.metadata")); err != nil {
			return r, err
		}
	}
	el := time.Since(start)
	r.MBps = float64(n) / el.Seconds()
	r.Detail = fmt.Sprintf("per second (not MB/s): %d dirs in %v, %.0f µs each", n, el.Round(time.Millisecond), float64(el.Microseconds())/float64(n))
	return r, nil
}

func crc32c(total int64) (Result, error) {
	r := Result{Name: "CRC32C"}
	table := crc32.MakeTable(crc32.Castagnoli)
	buf := make([]byte, 1<<20)
	var sum uint32
	start := time.Now()
	for done := int64(0); done < total; done += int64(len(buf)) {
		sum = crc32.Update(sum, table, buf)
	}
	r.MBps = mbps(total, time.Since(start))
	r.Detail = fmt.Sprintf("1 MiB blocks (sum %08x)", sum)
	return r, nil
}
