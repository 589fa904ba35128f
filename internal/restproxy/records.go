package restproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// POST /v3/clusters/{cluster_id}/topics/{topic_name}/records
//
// The body is one JSON record or a stream of them (concatenated JSON
// objects, sent chunked as they are produced). Each record is produced as
// soon as it is read; one report per record is written back in the order
// the records came, each flushed as soon as it and those before it are
// acknowledged. A record that fails gets a report with its error code and
// message in its place; the stream goes on. The HTTP status is that of
// the first report (200, or the first record's error).

// produceRequest is Confluent's v3 ProduceRequest.
type produceRequest struct {
	PartitionID *int32 `json:"partition_id"`
	Headers     []struct {
		Name  string `json:"name"`
		Value []byte `json:"value"` // base64
	} `json:"headers"`
	Key       *dataSpec  `json:"key"`
	Value     *dataSpec  `json:"value"`
	Timestamp *time.Time `json:"timestamp"`
}

// produceReport is Confluent's v3 ProduceResponse.
type produceReport struct {
	ErrorCode   int           `json:"error_code"`
	Message     string        `json:"message,omitempty"`
	ClusterID   string        `json:"cluster_id,omitempty"`
	TopicName   string        `json:"topic_name,omitempty"`
	PartitionID *int32        `json:"partition_id,omitempty"`
	Offset      *int64        `json:"offset,omitempty"`
	Timestamp   string        `json:"timestamp,omitempty"`
	Key         *reportData   `json:"key,omitempty"`
	Value       *reportData   `json:"value,omitempty"`
	status      int           // the HTTP status of this report as a whole response
	closeConn   bool          // the request body was left unread: close the connection after
	done        chan struct{} // closed once the record is acknowledged or failed
}

// reportData is a report's key or value: format, schema and size.
type reportData struct {
	Type          string  `json:"type"`
	Subject       *string `json:"subject,omitempty"`
	SchemaID      *int    `json:"schema_id,omitempty"`
	SchemaVersion *int    `json:"schema_version,omitempty"`
	Size          int     `json:"size"`
}

// maxInFlightReports bounds the records produced and not yet reported, so
// a fast writer of a slow cluster is pushed back on rather than buffered.
const maxInFlightReports = 16384

func (p *Proxy) routesRecords() {
	p.v3("POST /v3/clusters/{cluster_id}/topics/{topic_name}/records", p.produceRecords)
}

// boundedReader fails a read past max, which the stream decoder moves on
// with every record, so that no single record exceeds the request limit.
type boundedReader struct {
	r   io.Reader
	n   int64
	max int64
}

var errRecordTooLarge = errors.New("record too large")

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.n >= b.max {
		return 0, errRecordTooLarge
	}
	if rem := b.max - b.n; int64(len(p)) > rem {
		p = p[:rem]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	return n, err
}

func reportFor(format string, e encoded) *reportData {
	if format == "" && e.bytes == nil {
		return nil
	}
	rd := &reportData{Type: e.format, SchemaID: e.schemaID, SchemaVersion: e.schemaVersion, Size: len(e.bytes)}
	if rd.Type == "" {
		rd.Type = format
	}
	if e.subject != "" {
		s := e.subject
		rd.Subject = &s
	}
	return rd
}

func (p *Proxy) produceRecords(w http.ResponseWriter, r *http.Request) error {
	if err := requireJSON(r); err != nil {
		return err
	}
	c, cluster, err := p.cluster(r)
	if err != nil {
		return err
	}
	topic := r.PathValue("topic_name")
	td, err := describeTopic(r, c, topic)
	if err != nil {
		return err
	}
	nparts := int32(len(td.Partitions))

	// Reports go out while records still come in: HTTP/1.1 needs full
	// duplex for the body to stay readable once the response has begun.
	if err := http.NewResponseController(w).EnableFullDuplex(); err != nil && r.ProtoMajor == 1 {
		return errf(codeInternalServerError, "streaming produce needs a full-duplex connection: %v", err)
	}
	br := &boundedReader{r: r.Body, max: p.cfg.MaxRequestBytes}
	dec := json.NewDecoder(br)
	queue := make(chan *produceReport, maxInFlightReports)
	writerDone := make(chan struct{})
	go p.writeReports(w, queue, writerDone)

	cx := r.Context()
	records, failed := 0, false
	for {
		br.max = dec.InputOffset() + p.cfg.MaxRequestBytes + 4096
		var req produceRequest
		err := dec.Decode(&req)
		if err == io.EOF {
			break
		}
		rep := &produceReport{done: make(chan struct{})}
		if err != nil {
			ae := jsonErr(err)
			if errors.Is(err, errRecordTooLarge) {
				ae = errf(codeTooLarge, "Record larger than %d bytes", p.cfg.MaxRequestBytes)
			}
			rep.closeConn = true // before fail publishes rep
			p.fail(rep, ae)
			queue <- rep
			failed = true
			break // the stream cannot be resynchronised after bad JSON
		}
		records++
		rec, err := p.buildRecord(cx, topic, nparts, &req, rep)
		if err != nil {
			p.fail(rep, err)
			queue <- rep
			continue
		}
		rep.ClusterID, rep.TopicName = cluster, topic
		queue <- rep
		c.kgo.Produce(cx, rec, func(rec *kgo.Record, err error) {
			if err != nil {
				p.fail(rep, err)
				return
			}
			part, off := rec.Partition, rec.Offset
			rep.PartitionID, rep.Offset = &part, &off
			rep.Timestamp = rec.Timestamp.UTC().Format("2006-01-02T15:04:05.000Z07:00")
			rep.ErrorCode, rep.status = http.StatusOK, http.StatusOK
			close(rep.done)
		})
	}
	if records == 0 && !failed {
		rep := &produceReport{done: make(chan struct{})}
		p.fail(rep, errPayload("Request body is empty. Data is required."))
		queue <- rep
	}
	close(queue)
	<-writerDone
	return nil
}

// fail completes rep with err's code and message.
func (p *Proxy) fail(rep *produceReport, err error) {
	ae := kafkaErr(err)
	rep.ErrorCode, rep.Message, rep.status = ae.code, ae.msg, ae.status
	rep.ClusterID, rep.TopicName, rep.Key, rep.Value = "", "", nil, nil
	close(rep.done)
}

// buildRecord turns a produce request into a Kafka record.
func (p *Proxy) buildRecord(cx context.Context, topic string, nparts int32, req *produceRequest, rep *produceReport) (*kgo.Record, error) {
	rec := &kgo.Record{Topic: topic}
	if req.PartitionID != nil {
		if *req.PartitionID < 0 || *req.PartitionID >= nparts {
			return nil, errPartitionNotFound()
		}
		rec.Partition, rec.Context = *req.PartitionID, explicitPartition
	}
	key, err := p.encodeData(cx, topic, true, req.Key)
	if err != nil {
		return nil, err
	}
	val, err := p.encodeData(cx, topic, false, req.Value)
	if err != nil {
		return nil, err
	}
	rec.Key, rec.Value = key.bytes, val.bytes
	for _, h := range req.Headers {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Name, Value: h.Value})
	}
	if req.Timestamp != nil {
		rec.Timestamp = *req.Timestamp
	}
	if req.Key != nil {
		rep.Key = reportFor(fmtJSON, key)
	}
	if req.Value != nil {
		rep.Value = reportFor(fmtJSON, val)
	}
	return rec, nil
}

// writeReports writes the reports in order as each completes, flushing
// whenever no further report is ready, so a streaming client sees each
// delivery promptly. The first report's status is the response's.
func (p *Proxy) writeReports(w http.ResponseWriter, queue <-chan *produceReport, done chan<- struct{}) {
	defer close(done)
	bw := bufio.NewWriterSize(w, 64<<10)
	flusher, _ := w.(http.Flusher)
	first := true
	buf := make([]byte, 0, 512)
	broken := false
	for rep := range queue {
		<-rep.done
		if broken {
			continue
		}
		if first {
			first = false
			w.Header().Set("Content-Type", "application/json")
			if rep.closeConn {
				// The rest of the body is not read: the connection
				// cannot carry another request.
				w.Header().Set("Connection", "close")
			}
			w.WriteHeader(rep.status)
		}
		buf = appendReport(buf[:0], rep)
		if _, err := bw.Write(buf); err != nil {
			broken = true // the client went away; keep draining for the promises
			continue
		}
		if len(queue) == 0 {
			if bw.Flush() != nil {
				broken = true
				continue
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
	if !broken {
		bw.Flush()
	}
}

// appendReport writes one report's JSON and a newline. The success path,
// every record of a stream, is formatted by hand.
func appendReport(b []byte, rep *produceReport) []byte {
	if rep.ErrorCode != http.StatusOK || rep.Key != nil && rep.Key.Subject != nil || rep.Value != nil && rep.Value.Subject != nil {
		j, _ := json.Marshal(rep)
		return append(append(b, j...), '\n')
	}
	b = append(b, `{"error_code":200,"cluster_id":`...)
	b = strconv.AppendQuote(b, rep.ClusterID)
	b = append(b, `,"topic_name":`...)
	b = strconv.AppendQuote(b, rep.TopicName)
	b = append(b, `,"partition_id":`...)
	b = strconv.AppendInt(b, int64(*rep.PartitionID), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, *rep.Offset, 10)
	b = append(b, `,"timestamp":"`...)
	b = append(b, rep.Timestamp...)
	b = append(b, '"')
	for _, kv := range []struct {
		name string
		d    *reportData
	}{{"key", rep.Key}, {"value", rep.Value}} {
		if kv.d == nil {
			continue
		}
		b = append(b, `,"`...)
		b = append(b, kv.name...)
		b = append(b, `":{"type":`...)
		b = strconv.AppendQuote(b, kv.d.Type)
		if kv.d.SchemaID != nil {
			b = append(b, `,"schema_id":`...)
			b = strconv.AppendInt(b, int64(*kv.d.SchemaID), 10)
		}
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, int64(kv.d.Size), 10)
		b = append(b, '}')
	}
	return append(b, "}\n"...)
}
