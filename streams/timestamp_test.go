package streams_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/streams"
)

type event struct {
	ID string `json:"id"`
	At int64  `json:"at"`
}

// An extractor on the source sets the event time windows and outputs use.
func TestTimestampExtractorOnSource(t *testing.T) {
	b := streams.NewBuilder()
	s := streams.NewStream(b, "events", streams.String(), streams.JSON[event](),
		streams.WithTimestampExtractor(func(r streams.ConsumedRecord, _ int64) (int64, error) {
			return r.Value.(event).At, nil
		}))
	s.To("copy", streams.WithValueSerde(streams.JSON[event]()))
	streams.WindowedBy(s.GroupByKey(), streams.TimeWindowsOfSizeWithNoGrace(10*time.Millisecond)).Count().
		ToStream().To("counts", streams.WithKeySerde(streams.TimeWindowedSerde(streams.String(), 10*time.Millisecond)), streams.WithValueSerde(streams.Int64()))
	d := driver(t, b)
	in := streams.CreateInputTopic(d, "events", streams.String(), streams.JSON[event]())
	// Record timestamps are ignored: 1000 for all.
	pipe(t, in, "k", event{"a", 3}, 1000)
	pipe(t, in, "k", event{"b", 12}, 1000)
	pipe(t, in, "k", event{"c", 5}, 1000) // late: window [0,10) closed at stream time 12
	copy := streams.CreateOutputTopic(d, "copy", streams.String(), streams.JSON[event]())
	var got []string
	rs, err := copy.ReadRecordsToList()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		got = append(got, r.Value.ID+"@"+itoa(r.Timestamp))
	}
	expect(t, "copy timestamps", got, "a@3", "b@12", "c@5")
	expect(t, "windowed counts by event time",
		read(t, streams.CreateOutputTopic(d, "counts", streams.TimeWindowedSerde(streams.String(), 10*time.Millisecond), streams.Int64())),
		"[k@0/10]=1@3", "[k@10/20]=1@12")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// The built-in extractors treat a negative record timestamp as Kafka
// Streams' classes of the same names do.
func TestDefaultTimestampExtractors(t *testing.T) {
	run := func(x streams.TimestampExtractor) ([]string, error) {
		b := streams.NewBuilder()
		streams.NewStream(b, "in", streams.String(), streams.String()).To("out")
		topo, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		d, err := streams.NewTestDriver(topo, streams.TestDriverConfig{TimestampExtractor: x})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		in := streams.CreateInputTopic(d, "in", streams.String(), streams.String())
		var firstErr error
		for i, ts := range []int64{5, -1, 7} {
			if err := in.PipeInput("k", string(rune('a'+i)), ts); err != nil && firstErr == nil {
				firstErr = err
			}
		}
		return read(t, streams.CreateOutputTopic(d, "out", streams.String(), streams.String())), firstErr
	}
	got, err := run(nil) // FailOnInvalidTimestamp
	if err == nil || !strings.Contains(err.Error(), "FailOnInvalidTimestamp") {
		t.Errorf("default extractor on a negative timestamp: err %v, want a FailOnInvalidTimestamp error", err)
	}
	expect(t, "fail: records before the bad one", got[:1], "k=a@5")
	got, err = run(streams.LogAndSkipOnInvalidTimestamp)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "log and skip", got, "k=a@5", "k=c@7")
	got, err = run(streams.UsePartitionTimeOnInvalidTimestamp)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "use partition time", got, "k=a@5", "k=b@5", "k=c@7")

	c, err := streams.ParseConfig(map[string]string{"application.id": "x", "default.timestamp.extractor": "org.apache.kafka.streams.processor.WallclockTimestampExtractor"})
	if err != nil || c.TimestampExtractor == nil {
		t.Fatalf("ParseConfig(WallclockTimestampExtractor): %v", err)
	}
	before := time.Now().UnixMilli()
	if ts, _ := c.TimestampExtractor(streams.ConsumedRecord{Timestamp: 1}, -1); ts < before {
		t.Errorf("WallclockTimestampExtractor gave %d, before now %d", ts, before)
	}
	if _, err := streams.ParseConfig(map[string]string{"application.id": "x", "default.timestamp.extractor": "com.example.Mine"}); err == nil || !strings.Contains(err.Error(), "default.timestamp.extractor") {
		t.Errorf("unknown extractor class: err %v, want one naming default.timestamp.extractor", err)
	}
}
