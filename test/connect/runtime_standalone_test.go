package connect

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// A standalone worker runs a FileStream source into a topic and a
// FileStream sink out of it: every line arrives once, in order; after the
// worker is stopped and started again, the source resumes from the offset
// kept in offset.storage.file.filename and the sink from its committed
// consumer offsets, so no line is read or written twice.
func TestStandaloneFileStreamSourceToSink(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	writeFile(t, dir, "in.txt", numbered("line", 0, 500))
	src := writeFile(t, dir, "source.properties", fmt.Sprintf("name=file-source\nconnector.class=FileStreamSource\nfile=%s\ntopic=lines\nbatch.size=100\n", in))
	sink := writeFile(t, dir, "sink.json", fmt.Sprintf(`{"name":"file-sink","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","file":%q,"topics":"lines","tasks.max":"1"}}`, out))
	port := freeport.Port(t)
	props := workerProps(b, port, "offset.storage.file.filename="+filepath.Join(dir, "offsets"))
	w := startWorker(t, "standalone", port, props, src, sink)
	waitRunning(t, w.url, "file-source", 1)
	waitRunning(t, w.url, "file-sink", 1)
	want := lines(in)
	poll.Until(t, 60*time.Second, "the sink file to hold every line", func() error { return sameSet(lines(out), want) })
	if got := lines(out); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sink lines out of order")
	}
	// Offsets are flushed every 500 ms; wait until both are durable.
	poll.Until(t, 30*time.Second, "source and sink offsets to be committed", func() error {
		var so, ko struct {
			Offsets []struct {
				Offset map[string]any `json:"offset"`
			} `json:"offsets"`
		}
		mustCall(t, w.url, "GET", "/connectors/file-source/offsets", nil, 200, &so)
		mustCall(t, w.url, "GET", "/connectors/file-sink/offsets", nil, 200, &ko)
		if len(so.Offsets) != 1 || len(ko.Offsets) != 1 || ko.Offsets[0].Offset["kafka_offset"] != float64(500) {
			return fmt.Errorf("source %v sink %v", so, ko)
		}
		return nil
	})
	w.stop()

	appendFile(t, in, numbered("more", 0, 300))
	w = startWorker(t, "standalone", port, props, src, sink)
	want = lines(in)
	poll.Until(t, 60*time.Second, "the sink file to hold every line once", func() error { return sameSet(lines(out), want) })
	if got := topicValues(t, b, "lines", 800); len(got) != 800 {
		t.Fatalf("topic holds %d records, want 800", len(got))
	}
	// Nothing more arrives: the topic and the file stay at exactly 800.
	var s struct {
		Lines map[string]struct {
			Topics []string `json:"topics"`
		} `json:"file-source"`
	}
	mustCall(t, w.url, "GET", "/connectors/file-source/topics", nil, 200, &s.Lines)
	if fmt.Sprint(s.Lines["file-source"].Topics) != "[lines]" {
		t.Fatalf("topics of file-source: %+v", s.Lines)
	}
}
