// Package file holds Kafka's FileStream connectors:
// org.apache.kafka.connect.file.FileStreamSourceConnector reads lines of a
// file (or standard input) into a topic, keeping the byte position as its
// source offset; FileStreamSinkConnector appends each record's value as a
// line to a file (or standard output). Configuration keys as Kafka's: file,
// topic, topics, batch.size.
package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/vltava/vltava/connect"
)

// The class names.
const (
	SourceClass = "org.apache.kafka.connect.file.FileStreamSourceConnector"
	SinkClass   = "org.apache.kafka.connect.file.FileStreamSinkConnector"
	version     = "4.0.0"
)

// The source's offset map keys, as Kafka's FileStreamSourceTask.
const (
	filenameField = "filename"
	positionField = "position"
)

func init() {
	connect.RegisterSource(SourceClass, version, func() connect.SourceConnector { return &Source{} })
	connect.RegisterSink(SinkClass, version, func() connect.SinkConnector { return &Sink{} })
}

var sourceDef = connect.NewConfigDef().
	Define(connect.ConfigKey{Name: "file", Type: connect.TypeString, Default: "", Importance: connect.High, Doc: "Source filename. If not specified, the standard input will be used"}).
	Define(connect.ConfigKey{Name: "topic", Type: connect.TypeList, Required: true, Importance: connect.High, Doc: "The topic to publish data to", Check: singleTopic}).
	Define(connect.ConfigKey{Name: "batch.size", Type: connect.TypeInt, Default: int32(2000), Importance: connect.Low, Doc: "The maximum number of records the source task can read from the file each time it is polled", Check: connect.InRange(1, 1<<31-1)})

func singleTopic(name string, v any) error {
	if l, _ := v.([]string); len(l) != 1 || l[0] == "" {
		return fmt.Errorf("Invalid value %s for configuration %s: 'topic' in FileStreamSourceConnector configuration requires definition of a single topic", strings.Join(l, ","), name)
	}
	return nil
}

// Source is FileStreamSourceConnector.
type Source struct{ props map[string]string }

// Version implements connect.Connector.
func (s *Source) Version() string { return version }

// Config implements connect.Connector.
func (s *Source) Config() *connect.ConfigDef { return sourceDef }

// Initialize implements connect.Connector.
func (s *Source) Initialize(connect.ConnectorContext) {}

// Start implements connect.Connector.
func (s *Source) Start(props map[string]string) error {
	if _, err := sourceDef.Parse(props); err != nil {
		return err
	}
	s.props = props
	return nil
}

// TaskConfigs implements connect.Connector: one task, whatever tasks.max.
func (s *Source) TaskConfigs(int) ([]map[string]string, error) {
	cfg := map[string]string{"topic": strings.TrimSpace(s.props["topic"]), "batch.size": "2000"}
	if v, ok := s.props["batch.size"]; ok {
		cfg["batch.size"] = strings.TrimSpace(v)
	}
	if f := strings.TrimSpace(s.props["file"]); f != "" {
		cfg["file"] = f
	}
	return []map[string]string{cfg}, nil
}

// Stop implements connect.Connector.
func (s *Source) Stop() error { return nil }

// NewTask implements connect.SourceConnector.
func (s *Source) NewTask() connect.SourceTask { return &sourceTask{} }

// ExactlyOnceSupport implements connect.ExactlyOnceSource: a file's
// positions can be replayed, standard input's cannot.
func (s *Source) ExactlyOnceSupport(props map[string]string) connect.ExactlyOnceSupport {
	if strings.TrimSpace(props["file"]) != "" {
		return connect.ExactlyOnceSupported
	}
	return connect.ExactlyOnceUnsupported
}

type sourceTask struct {
	ctx       connect.SourceTaskContext
	filename  string
	topic     string
	batchSize int
	f         *os.File
	r         io.Reader
	buf       []byte // read but not yet returned (an incomplete last line)
	pos       int64  // file position of buf[0]
	stdin     bool
}

var valueSchema = &connect.Schema{Type: connect.String}

func (t *sourceTask) Version() string                          { return version }
func (t *sourceTask) Initialize(ctx connect.SourceTaskContext) { t.ctx = ctx }

func (t *sourceTask) Start(props map[string]string) error {
	p, err := sourceDef.Parse(props)
	if err != nil {
		return err
	}
	t.filename = p["file"].(string)
	t.topic = p["topic"].([]string)[0]
	t.batchSize = int(p["batch.size"].(int32))
	if t.filename == "" {
		t.stdin = true
		t.r = os.Stdin
	}
	return nil
}

// open opens the file once it exists, seeking to the committed position.
func (t *sourceTask) open() error {
	f, err := os.Open(t.filename)
	if errors.Is(err, os.ErrNotExist) {
		return nil // Kafka waits for the file to appear
	}
	if err != nil {
		return fmt.Errorf("couldn't open %s: %w", t.filename, err)
	}
	off, err := t.ctx.OffsetStorageReader().Offset(map[string]any{filenameField: t.filename})
	if err != nil {
		f.Close()
		return err
	}
	if off != nil {
		pos, ok := off[positionField].(int64)
		if !ok {
			f.Close()
			return fmt.Errorf("offset position is the incorrect type: %T", off[positionField])
		}
		if _, err := f.Seek(pos, io.SeekStart); err != nil {
			f.Close()
			return fmt.Errorf("seeking %s to %d: %w", t.filename, pos, err)
		}
		t.pos = pos
	}
	t.f, t.r = f, f
	return nil
}

func (t *sourceTask) Poll(ctx context.Context) ([]connect.SourceRecord, error) {
	if t.r == nil {
		if err := t.open(); err != nil {
			return nil, err
		}
		if t.r == nil {
			return nil, wait(ctx, time.Second)
		}
	}
	var recs []connect.SourceRecord
	chunk := make([]byte, 64<<10)
	for len(recs) < t.batchSize {
		recs = t.lines(recs)
		if len(recs) >= t.batchSize {
			break
		}
		n, err := t.r.Read(chunk)
		t.buf = append(t.buf, chunk[:n]...)
		if n == 0 || err != nil {
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("error reading %s: %w", t.filename, err)
			}
			recs = t.lines(recs)
			break
		}
	}
	if len(recs) == 0 {
		return nil, wait(ctx, time.Second)
	}
	return recs, nil
}

// lines moves complete lines from buf into records (up to batchSize). "\n",
// "\r\n" and "\r" end lines, as Java's readLine.
func (t *sourceTask) lines(recs []connect.SourceRecord) []connect.SourceRecord {
	for len(recs) < t.batchSize {
		i := bytes.IndexAny(t.buf, "\r\n")
		if i < 0 {
			return recs
		}
		end := i + 1
		if t.buf[i] == '\r' {
			if i+1 == len(t.buf) {
				return recs // a "\r\n" may be split across reads
			}
			if t.buf[i+1] == '\n' {
				end++
			}
		}
		line := string(t.buf[:i])
		t.buf = t.buf[end:]
		t.pos += int64(end)
		rec := connect.SourceRecord{Record: connect.Record{Topic: t.topic, ValueSchema: valueSchema, Value: line}}
		if !t.stdin {
			rec.SourcePartition = map[string]any{filenameField: t.filename}
			rec.SourceOffset = map[string]any{positionField: t.pos}
		}
		recs = append(recs, rec)
	}
	return recs
}

func wait(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	return nil
}

func (t *sourceTask) Commit() error { return nil }

func (t *sourceTask) Stop() error {
	if t.f != nil {
		return t.f.Close()
	}
	return nil
}
