package spooldir

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vltava/vltava/connect"
)

// The source partition and offset keys, as the original connector stores
// them: one partition per file name, the offset the number of records read.
const (
	partitionFileName = "fileName"
	offsetKey         = "offset"
)

// sourceTask reads one file at a time. Poll runs on the worker's task
// goroutine and owns every field but stop.
type sourceTask struct {
	cfg  *config
	ctx  connect.SourceTaskContext
	cur  *openFile
	done map[string]bool // files finished with cleanup.policy=NONE

	stopOnce sync.Once
	stop     chan struct{} // closed by Stop to end a waiting Poll
}

type openFile struct {
	name, path  string
	f           *os.File
	r           *csv.Reader
	keySchema   *connect.Schema
	valueSchema *connect.Schema
	columns     map[string]int // field name → column, from the header row
	offset      int64          // records read so far
}

func (t *sourceTask) Version() string { return version }

func (t *sourceTask) Initialize(ctx connect.SourceTaskContext) { t.ctx = ctx }

func (t *sourceTask) Start(props map[string]string) error {
	cfg, err := parseConfig(props)
	if err != nil {
		return err
	}
	t.cfg = cfg
	t.done = map[string]bool{}
	t.stop = make(chan struct{})
	return nil
}

func (t *sourceTask) Stop() error {
	t.stopOnce.Do(func() { close(t.stop) })
	return nil
}

func (t *sourceTask) Commit() error { return nil }

// Poll returns up to batch.size records of the current file, opening the
// next file when none is open and waiting empty.poll.wait.ms when the
// directory holds none.
func (t *sourceTask) Poll(ctx context.Context) ([]connect.SourceRecord, error) {
	if t.cur == nil {
		f, err := t.nextFile()
		if err != nil {
			return nil, err
		}
		if f == nil {
			select {
			case <-ctx.Done():
			case <-t.stop:
			case <-time.After(t.cfg.emptyWait):
			}
			return nil, nil
		}
		if err := t.open(f); err != nil {
			return nil, t.failed(f, err)
		}
	}
	var out []connect.SourceRecord
	for len(out) < t.cfg.batchSize {
		row, err := t.cur.r.Read()
		if errors.Is(err, io.EOF) {
			if err := t.finish(); err != nil {
				return out, err
			}
			break
		}
		if err != nil {
			f := t.cur
			if herr := t.failed(f, err); herr != nil {
				return nil, herr
			}
			return out, nil
		}
		rec, err := t.record(row)
		if err != nil {
			f := t.cur
			if herr := t.failed(f, fmt.Errorf("record %d: %w", t.cur.offset+1, err)); herr != nil {
				return nil, herr
			}
			return out, nil
		}
		out = append(out, rec)
	}
	return out, nil
}

// nextFile finds the first (by name) file of input.path matching the
// pattern and old enough.
func (t *sourceTask) nextFile() (*openFile, error) {
	entries, err := os.ReadDir(t.cfg.inputPath)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", t.cfg.inputPath, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		if e.IsDir() || !t.cfg.pattern.MatchString(e.Name()) || t.done[e.Name()] {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		if t.cfg.minAge > 0 && time.Since(info.ModTime()) < t.cfg.minAge {
			continue
		}
		return &openFile{name: e.Name(), path: filepath.Join(t.cfg.inputPath, e.Name())}, nil
	}
	return nil, nil
}

// open opens the file, reads its header, builds its schemas and skips the
// records its stored offset says were read.
func (t *sourceTask) open(of *openFile) error {
	f, err := os.Open(of.path)
	if err != nil {
		return err
	}
	of.f = f
	of.r = csv.NewReader(f)
	of.r.Comma = t.cfg.separator
	of.r.FieldsPerRecord = -1
	of.r.ReuseRecord = false
	of.keySchema, of.valueSchema = t.cfg.keySchema, t.cfg.valueSchema
	if t.cfg.firstRowHeader {
		header, err := of.r.Read()
		if err != nil {
			if errors.Is(err, io.EOF) {
				header = nil
			} else {
				return fmt.Errorf("reading the header row: %w", err)
			}
		}
		of.columns = map[string]int{}
		for i, h := range header {
			of.columns[strings.TrimSpace(h)] = i
		}
		if of.valueSchema == nil {
			of.valueSchema = &connect.Schema{Type: connect.StructT, Name: t.cfg.genValueName}
			for i, h := range header {
				of.valueSchema.Fields = append(of.valueSchema.Fields, connect.Field{Name: strings.TrimSpace(h), Index: i,
					Schema: &connect.Schema{Type: connect.String, Optional: true}})
			}
			if len(t.cfg.genKeyFields) > 0 && of.keySchema == nil {
				of.keySchema = &connect.Schema{Type: connect.StructT, Name: t.cfg.genKeyName}
				for i, k := range t.cfg.genKeyFields {
					if _, ok := of.columns[k]; !ok {
						return fmt.Errorf("%s names %s, which is not a column of the header", keyGenKeyFields, k)
					}
					of.keySchema.Fields = append(of.keySchema.Fields, connect.Field{Name: k, Index: i,
						Schema: &connect.Schema{Type: connect.String, Optional: true}})
				}
			}
		}
	}
	t.cur = of
	stored, err := t.ctx.OffsetStorageReader().Offset(map[string]any{partitionFileName: of.name})
	if err != nil {
		return fmt.Errorf("reading the stored offset: %w", err)
	}
	skip, err := offsetOf(stored)
	if err != nil {
		return err
	}
	for of.offset < skip {
		if _, err := of.r.Read(); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("skipping to the stored offset %d: %w", skip, err)
		}
		of.offset++
	}
	if skip > 0 {
		slog.Info("spooldir: resuming file", "file", of.name, "offset", skip)
	}
	return nil
}

func offsetOf(stored map[string]any) (int64, error) {
	if stored == nil {
		return 0, nil
	}
	switch v := stored[offsetKey].(type) {
	case nil:
		return 0, nil
	case int64:
		return v, nil
	case int32:
		return int64(v), nil
	case int:
		return int64(v), nil
	case float64:
		return int64(v), nil
	case json.Number:
		return v.Int64()
	case string:
		return strconv.ParseInt(v, 10, 64)
	}
	return 0, fmt.Errorf("stored offset %v is not a number", stored[offsetKey])
}

// record turns one CSV row into a source record.
func (t *sourceTask) record(row []string) (connect.SourceRecord, error) {
	of := t.cur
	of.offset++
	value, err := of.build(of.valueSchema, row)
	if err != nil {
		return connect.SourceRecord{}, err
	}
	var key any
	if of.keySchema != nil {
		if key, err = of.build(of.keySchema, row); err != nil {
			return connect.SourceRecord{}, err
		}
	}
	return connect.SourceRecord{
		Record: connect.Record{Topic: t.cfg.topic, KeySchema: of.keySchema, Key: key,
			ValueSchema: of.valueSchema, Value: value, Timestamp: time.Now()},
		SourcePartition: map[string]any{partitionFileName: of.name},
		SourceOffset:    map[string]any{offsetKey: of.offset},
	}, nil
}

// build fills a struct of schema s from a row: by header name when the file
// has a header, else by position.
func (of *openFile) build(s *connect.Schema, row []string) (*connect.Struct, error) {
	if s.Type != connect.StructT {
		return nil, fmt.Errorf("the schema must be a STRUCT, not %s", s.Type)
	}
	st := connect.NewStruct(s)
	for i, f := range s.Fields {
		col := i
		if of.columns != nil {
			c, ok := of.columns[f.Name]
			if !ok {
				col = -1
			} else {
				col = c
			}
		}
		if col < 0 || col >= len(row) {
			if !f.Schema.Optional {
				return nil, fmt.Errorf("required field %s has no column", f.Name)
			}
			continue
		}
		v, err := parseField(f.Schema, row[col])
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		if v != nil {
			if err := st.Put(f.Name, v); err != nil {
				return nil, err
			}
		} else if !f.Schema.Optional {
			return nil, fmt.Errorf("field %s is required but empty", f.Name)
		}
	}
	return st, nil
}

// parseField parses a CSV cell into a value of the field's type; an empty
// cell is null for every type but STRING.
func parseField(s *connect.Schema, cell string) (any, error) {
	if s.Type == connect.String && s.Name == "" {
		return cell, nil
	}
	cell = strings.TrimSpace(cell)
	if cell == "" {
		return nil, nil
	}
	if s.Name == connect.DecimalName {
		scale, err := strconv.Atoi(s.Parameters[connect.DecimalScaleParam])
		if err != nil {
			return nil, fmt.Errorf("decimal schema without a scale")
		}
		r, ok := new(big.Rat).SetString(cell)
		if !ok {
			return nil, fmt.Errorf("%q is not a decimal", cell)
		}
		r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
		if !r.IsInt() {
			return nil, fmt.Errorf("%q has more digits than scale %d", cell, scale)
		}
		return connect.Decimal{Unscaled: r.Num(), Scale: int32(scale)}, nil
	}
	if s.Name != "" {
		return nil, fmt.Errorf("the logical type %s is not supported in CSV files", s.Name)
	}
	switch s.Type {
	case connect.Int8, connect.Int16, connect.Int32, connect.Int64:
		bits := map[connect.Type]int{connect.Int8: 8, connect.Int16: 16, connect.Int32: 32, connect.Int64: 64}[s.Type]
		n, err := strconv.ParseInt(cell, 10, bits)
		if err != nil {
			return nil, fmt.Errorf("%q is not an %s", cell, s.Type)
		}
		switch s.Type {
		case connect.Int8:
			return int8(n), nil
		case connect.Int16:
			return int16(n), nil
		case connect.Int32:
			return int32(n), nil
		}
		return n, nil
	case connect.Float32:
		f, err := strconv.ParseFloat(cell, 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not a float32", cell)
		}
		return float32(f), nil
	case connect.Float64:
		f, err := strconv.ParseFloat(cell, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a float64", cell)
		}
		return f, nil
	case connect.Boolean:
		b, err := strconv.ParseBool(cell)
		if err != nil {
			return nil, fmt.Errorf("%q is not a boolean", cell)
		}
		return b, nil
	case connect.Bytes:
		return []byte(cell), nil
	}
	return nil, fmt.Errorf("fields of type %s are not supported in CSV files", s.Type)
}

// finish cleans up a file read to its end.
func (t *sourceTask) finish() error {
	of := t.cur
	t.cur = nil
	_ = of.f.Close()
	slog.Info("spooldir: finished file", "file", of.name, "records", of.offset, "cleanup", t.cfg.cleanup)
	switch t.cfg.cleanup {
	case "MOVE":
		return moveFile(of.path, filepath.Join(t.cfg.finishedPath, of.name))
	case "DELETE":
		return os.Remove(of.path)
	}
	t.done[of.name] = true
	return nil
}

// failed moves a file that could not be read to error.path; the error
// fails the task when halt.on.error is set.
func (t *sourceTask) failed(of *openFile, cause error) error {
	if of.f != nil {
		_ = of.f.Close()
	}
	t.cur = nil
	slog.Error("spooldir: error reading file", "file", of.name, "err", cause)
	if err := moveFile(of.path, filepath.Join(t.cfg.errDir, of.name)); err != nil {
		return fmt.Errorf("%s: %v; moving it to %s: %w", of.name, cause, t.cfg.errDir, err)
	}
	if t.cfg.haltOnError {
		return fmt.Errorf("%s: %w", of.name, cause)
	}
	return nil
}

// moveFile renames, or copies and removes across file systems.
func moveFile(from, to string) error {
	if err := os.Rename(from, to); err == nil {
		return nil
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Remove(from)
}
