package file

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/vltava/vltava/connect"
)

var sinkDef = connect.NewConfigDef().
	Define(connect.ConfigKey{Name: "file", Type: connect.TypeString, Default: "", Importance: connect.High, Doc: "Destination filename. If not specified, the standard output will be used"})

// Sink is FileStreamSinkConnector.
type Sink struct{ props map[string]string }

// Version implements connect.Connector.
func (s *Sink) Version() string { return version }

// Config implements connect.Connector.
func (s *Sink) Config() *connect.ConfigDef { return sinkDef }

// Initialize implements connect.Connector.
func (s *Sink) Initialize(connect.ConnectorContext) {}

// Start implements connect.Connector.
func (s *Sink) Start(props map[string]string) error {
	if _, err := sinkDef.Parse(props); err != nil {
		return err
	}
	s.props = props
	return nil
}

// TaskConfigs implements connect.Connector: maxTasks copies, as Kafka's.
func (s *Sink) TaskConfigs(maxTasks int) ([]map[string]string, error) {
	out := make([]map[string]string, maxTasks)
	for i := range out {
		out[i] = map[string]string{}
		if f := strings.TrimSpace(s.props["file"]); f != "" {
			out[i]["file"] = f
		}
	}
	return out, nil
}

// Stop implements connect.Connector.
func (s *Sink) Stop() error { return nil }

// NewTask implements connect.SinkConnector.
func (s *Sink) NewTask() connect.SinkTask { return &sinkTask{} }

type sinkTask struct {
	f *os.File
	w *bufio.Writer
}

func (t *sinkTask) Version() string                    { return version }
func (t *sinkTask) Initialize(connect.SinkTaskContext) {}

func (t *sinkTask) Start(props map[string]string) error {
	name := strings.TrimSpace(props["file"])
	if name == "" {
		t.w = bufio.NewWriter(os.Stdout)
		return nil
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("couldn't find or create file '%s' for FileStreamSinkTask: %w", name, err)
	}
	t.f, t.w = f, bufio.NewWriterSize(f, 256<<10)
	return nil
}

func (t *sinkTask) Open([]connect.TopicPartition) error { return nil }

func (t *sinkTask) Put(recs []connect.SinkRecord) error {
	for i := range recs {
		v := recs[i].Value
		var s string
		switch x := v.(type) {
		case nil:
			s = "null"
		case string:
			s = x
		case []byte:
			s = string(x)
		default:
			s = fmt.Sprint(x)
		}
		if _, err := t.w.WriteString(s); err != nil {
			return err
		}
		if err := t.w.WriteByte('\n'); err != nil {
			return err
		}
	}
	return nil
}

// PreCommit flushes what was put, then the offsets of it are safe.
func (t *sinkTask) PreCommit(cur map[connect.TopicPartition]int64) (map[connect.TopicPartition]int64, error) {
	if err := t.w.Flush(); err != nil {
		return nil, err
	}
	return cur, nil
}

func (t *sinkTask) Close([]connect.TopicPartition) error { return t.w.Flush() }

func (t *sinkTask) Stop() error {
	err := t.w.Flush()
	if t.f != nil {
		if cerr := t.f.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
