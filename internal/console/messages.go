package console

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// MessagesPage is a window of one partition's records.
type MessagesPage struct {
	Topic      string
	Partitions []int32
	Partition  int32
	Offset     int64  // the first offset asked for
	Time       string // the ?time= asked for, as given
	TimeOffset int64  // the offset ?time= resolved to, -1 if none
	Limit      int
	Start, End int64 // the partition's log start and end offsets
	Records    []Record
	Next, Prev int64 // offsets of the next and previous windows; -1: none
	Note       string
}

// Record is one record as the page shows it.
type Record struct {
	Offset    int64
	Timestamp int64 // ms
	Key       Value
	Value     Value
	Headers   []Header
}

// Header is one record header.
type Header struct {
	Key   string
	Value Value
}

// Value is a key, value or header value: the string when it is valid UTF-8,
// else hex.
type Value struct {
	Null  bool
	Hex   bool
	Text  string
	Bytes int
}

func valueOf(b []byte, null bool) Value {
	if null {
		return Value{Null: true}
	}
	if utf8.Valid(b) {
		return Value{Text: string(b), Bytes: len(b)}
	}
	return Value{Hex: true, Text: hex.EncodeToString(b), Bytes: len(b)}
}

const (
	defaultLimit = 50
	maxLimit     = 500
	// readWait bounds how long one page waits for a partition's records
	// once it knows they are there (the end offset is past the window).
	readWait = 5 * time.Second
)

// messages answers GET /topics/{topic}/messages?partition=&offset=&limit=
// or ?partition=&time= (RFC 3339 or Unix milliseconds): the records from
// offset (or from the first record at or after time, by ListOffsets with
// a timestamp) up to limit, never past the end offset read first, so the
// page returns as soon as it has them. A window outside the log is moved
// to its start or end and says so.
func (c *Console) messages(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("topic")
	q := r.URL.Query()
	ctx, cancel := c.ctx(r)
	defer cancel()
	td, err := c.adm.ListTopicsWithInternal(ctx, name)
	if err == nil {
		err = td[name].Err
	}
	if err != nil {
		c.fail(w, r, http.StatusNotFound, "Messages of "+name, err, "")
		return
	}
	m := MessagesPage{Topic: name, Limit: min(positive(q.Get("limit"), defaultLimit), maxLimit), TimeOffset: -1, Next: -1, Prev: -1}
	for _, p := range td[name].Partitions.Sorted() {
		m.Partitions = append(m.Partitions, p.Partition)
	}
	if len(m.Partitions) == 0 {
		c.fail(w, r, http.StatusNotFound, "Messages of "+name, errors.New("the topic has no partitions"), "")
		return
	}
	if p, err := strconv.ParseInt(q.Get("partition"), 10, 32); err == nil {
		m.Partition = int32(p)
	}
	if _, ok := td[name].Partitions[m.Partition]; !ok {
		c.fail(w, r, http.StatusNotFound, "Messages of "+name, fmt.Errorf("no partition %d (the topic has %d)", m.Partition, len(m.Partitions)), "Pick a partition from the list.")
		return
	}
	starts, err := c.adm.ListStartOffsets(ctx, name)
	if err == nil {
		m.Start, err = offsetOf(starts.Lookup(name, m.Partition))
	}
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "Messages of "+name, err, "")
		return
	}
	ends, err := c.adm.ListEndOffsets(ctx, name)
	if err == nil {
		m.End, err = offsetOf(ends.Lookup(name, m.Partition))
	}
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "Messages of "+name, err, "")
		return
	}
	m.Offset = m.Start
	if s := strings.TrimSpace(q.Get("offset")); s != "" {
		o, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			c.fail(w, r, http.StatusBadRequest, "Messages of "+name, fmt.Errorf("offset %q is not a number", s), "Give an offset between the partition's start and end.")
			return
		}
		m.Offset = o
	}
	if s := strings.TrimSpace(q.Get("time")); s != "" {
		m.Time = s
		ms, err := parseTime(s)
		if err != nil {
			c.fail(w, r, http.StatusBadRequest, "Messages of "+name, err, "Give a time as 2006-01-02T15:04:05Z (RFC 3339) or Unix milliseconds.")
			return
		}
		// ListOffsets with a timestamp: the first offset whose record is
		// at or after ms; the end offset when none is.
		lo, err := c.adm.ListOffsetsAfterMilli(ctx, ms, name)
		if err == nil {
			m.Offset, err = offsetOf(lo.Lookup(name, m.Partition))
		}
		if err != nil {
			c.fail(w, r, http.StatusBadGateway, "Messages of "+name, err, "")
			return
		}
		m.TimeOffset = m.Offset
	}
	switch {
	case m.Offset < m.Start:
		m.Note = fmt.Sprintf("Offset %d is before the log start (%d): showing from the start.", m.Offset, m.Start)
		m.Offset = m.Start
	case m.Offset > m.End:
		m.Note = fmt.Sprintf("Offset %d is past the end (%d): nothing to show yet.", m.Offset, m.End)
		m.Offset = m.End
	}
	until := min(m.End, m.Offset+int64(m.Limit))
	if m.Offset < until {
		recs, err := c.read(r.Context(), name, m.Partition, m.Offset, until, m.Limit)
		if err != nil {
			c.fail(w, r, http.StatusBadGateway, "Messages of "+name, err, "")
			return
		}
		m.Records = recs
		if len(recs) == 0 {
			m.Note = fmt.Sprintf("No records arrived for offsets %d to %d within %v: they may be transaction markers or compacted away.", m.Offset, until-1, readWait)
		}
	}
	if n := len(m.Records); n > 0 && m.Records[n-1].Offset+1 < m.End {
		m.Next = m.Records[n-1].Offset + 1
	} else if n == 0 && until < m.End {
		m.Next = until
	}
	if m.Offset > m.Start {
		m.Prev = max(m.Start, m.Offset-int64(m.Limit))
	}
	c.render(w, http.StatusOK, "messages", "Messages of "+name, "topics", m)
}

// offsetOf is a looked-up offset, or why there is none.
func offsetOf(o kadm.ListedOffset, ok bool) (int64, error) {
	if !ok {
		return 0, errors.New("the broker did not answer for this partition")
	}
	return o.Offset, o.Err
}

// read consumes one partition from offset until the offset before until,
// or limit records, with a client of its own (no group, read_committed
// off: the page shows what the log holds).
func (c *Console) read(ctx context.Context, topic string, partition int32, from, until int64, limit int) ([]Record, error) {
	opts := append(c.cfg.clientOpts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, readWait)
	defer cancel()
	var out []Record
	for len(out) < limit {
		fs := cl.PollRecords(ctx, limit-len(out))
		if ctx.Err() != nil {
			// The offsets left in the window hold no records a consumer
			// sees (transaction markers, records compacted away), or the
			// leader is slow: the page shows what arrived.
			return out, nil
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return nil, ferr
		}
		done := false
		fs.EachRecord(func(rec *kgo.Record) {
			if done || rec.Offset >= until || len(out) >= limit {
				done = true
				return
			}
			out = append(out, recordOf(rec))
		})
		if done || (len(out) > 0 && out[len(out)-1].Offset+1 >= until) {
			break
		}
	}
	return out, nil
}

func recordOf(rec *kgo.Record) Record {
	out := Record{Offset: rec.Offset, Timestamp: rec.Timestamp.UnixMilli(), Key: valueOf(rec.Key, rec.Key == nil), Value: valueOf(rec.Value, rec.Value == nil)}
	for _, h := range rec.Headers {
		out.Headers = append(out.Headers, Header{Key: h.Key, Value: valueOf(h.Value, h.Value == nil)})
	}
	return out
}

// parseTime reads RFC 3339 (with or without seconds' fraction, or the
// datetime-local form 2006-01-02T15:04 taken as UTC) or Unix milliseconds.
func parseTime(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("time %q is neither RFC 3339 nor Unix milliseconds", s)
}
