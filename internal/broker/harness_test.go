package broker_test

// The harness starts an in-process node on a loopback port and talks to it
// over a raw connection: requests are sent at exactly the version a test
// names (a kgo client would negotiate its own), and a test can hold a
// connection open across requests, as fetch sessions need.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/node"
	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/testing/poll"
)

// testNode is a running node and the address of its PLAINTEXT listener.
type testNode struct {
	t    *testing.T
	n    *node.Node
	addr string
}

// startNode starts a node with the given broker properties on top of a
// loopback listener and a temporary log dir.
func startNode(t *testing.T, props map[string]string) *testNode {
	t.Helper()
	all := map[string]string{
		"listeners":                 "PLAINTEXT://127.0.0.1:0",
		"log.dirs":                  t.TempDir(),
		"node.id":                   "1",
		"auto.create.topics.enable": "false",
		"admin.listeners":           "", // several nodes per process: no admin port each
		"rest.listeners":            "",
		"schema.registry.listeners": "",
		"console.listeners":         "",
	}
	for k, v := range props {
		all[k] = v
	}
	cfg, _, err := config.ParseBroker(all)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	n, err := node.Start(cfg, logger)
	if err != nil {
		t.Fatalf("starting node: %v", err)
	}
	t.Cleanup(func() { n.Close() })
	addr := n.Addrs()["PLAINTEXT"]
	if addr == nil {
		t.Fatalf("no PLAINTEXT listener in %v", n.Addrs())
	}
	return &testNode{t: t, n: n, addr: addr.String()}
}

// conn is one raw client connection.
type conn struct {
	t     *testing.T
	c     net.Conn
	r     *bufio.Reader
	corr  int32
	fmter *kmsg.RequestFormatter
}

func (tn *testNode) dial() *conn {
	tn.t.Helper()
	c, err := net.DialTimeout("tcp", tn.addr, 5*time.Second)
	if err != nil {
		tn.t.Fatalf("dial: %v", err)
	}
	tn.t.Cleanup(func() { c.Close() })
	return &conn{t: tn.t, c: c, r: bufio.NewReader(c), fmter: kmsg.NewRequestFormatter(kmsg.FormatterClientID("broker-test"))}
}

// send writes a request at its set version and returns its correlation id.
func (c *conn) send(req kmsg.Request) int32 {
	c.t.Helper()
	c.corr++
	buf := c.fmter.AppendRequest(nil, req, c.corr)
	c.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.c.Write(buf); err != nil {
		c.t.Fatalf("write %s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return c.corr
}

// recv reads the response to req, waiting at most timeout.
func (c *conn) recv(req kmsg.Request, corr int32, timeout time.Duration) (kmsg.Response, error) {
	c.c.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(c.r, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.r, body); err != nil {
		return nil, err
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		return nil, fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	// Response header v1 (flexible versions, except ApiVersions) carries
	// tagged fields.
	if req.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		n, used := binary.Uvarint(body)
		body = body[used:]
		for ; n > 0; n-- {
			_, used = binary.Uvarint(body) // tag
			body = body[used:]
			size, used := binary.Uvarint(body)
			body = body[used+int(size):]
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decoding %s v%d response: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}

// do sends req at version v and returns its response.
func do[R kmsg.Response](c *conn, v int16, req kmsg.Request) R {
	c.t.Helper()
	req.SetVersion(v)
	corr := c.send(req)
	resp, err := c.recv(req, corr, 20*time.Second)
	if err != nil {
		c.t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), v, err)
	}
	return resp.(R)
}

// createTopic creates a topic with the given partition count and configs.
func createTopic(c *conn, name string, partitions int32, configs map[string]string) [16]byte {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	resp := do[*kmsg.CreateTopicsResponse](c, 7, req)
	if ec := resp.Topics[0].ErrorCode; ec != 0 {
		c.t.Fatalf("creating %s: error %d %v", name, ec, resp.Topics[0].ErrorMessage)
	}
	return resp.Topics[0].TopicID
}

// batch builds a v2 batch of the given values, timestamped now.
func batch(t *testing.T, codec record.Codec, values ...string) []byte {
	t.Helper()
	return batchAt(t, codec, time.Now().UnixMilli(), values...)
}

// batchAt builds a v2 batch whose records all carry timestamp ts.
func batchAt(t *testing.T, codec record.Codec, ts int64, values ...string) []byte {
	t.Helper()
	h := record.Header{
		Magic: 2, FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		LastOffsetDelta: int32(len(values) - 1), NumRecords: int32(len(values)),
	}
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{OffsetDelta: int32(i), Value: []byte(v)}
	}
	b, err := record.BuildBatch(h, recs, codec)
	if err != nil {
		t.Fatalf("building batch: %v", err)
	}
	return b
}

// produceReq is a one-partition produce request.
func produceReq(topic string, partition int32, acks int16, data []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = data
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produce appends values to a partition with acks=1 and returns the base offset.
func produce(c *conn, topic string, partition int32, values ...string) int64 {
	c.t.Helper()
	resp := do[*kmsg.ProduceResponse](c, 11, produceReq(topic, partition, 1, batch(c.t, record.CodecNone, values...)))
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		c.t.Fatalf("produce to %s-%d: error %d %v", topic, partition, p.ErrorCode, p.ErrorMessage)
	}
	return p.BaseOffset
}

// fetchReq is a sessionless fetch of one partition by name (v<13) or id.
func fetchReq(topic string, id [16]byte, partition int32, offset int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxBytes = 50 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = partition
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 1 << 20
	rp.CurrentLeaderEpoch = -1
	rp.LastFetchedEpoch = -1
	rp.LogStartOffset = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// batchHeaders parses the v2 batches of a record set.
//
// Like Kafka, the broker may end a record set inside a batch when a byte
// limit cuts it (clients drop the partial batch); the first batch is always
// whole (KIP-74). Only whole batches are returned.
func batchHeaders(t *testing.T, data []byte) []record.Header {
	t.Helper()
	var out []record.Header
	for len(data) > 0 {
		if len(out) > 0 && len(data) < record.BatchHeaderSize {
			break // partial trailing batch header
		}
		h, err := record.ParseHeader(data)
		if err != nil {
			t.Fatalf("parsing batch: %v", err)
		}
		n := 12 + int(h.Length)
		if n > len(data) {
			if len(out) > 0 {
				break // partial trailing batch
			}
			t.Fatalf("truncated first batch: %d of %d bytes", len(data), n)
		}
		out = append(out, h)
		data = data[n:]
	}
	return out
}

// within runs f until it succeeds or the deadline passes.
func within(t *testing.T, d time.Duration, what string, f func() bool) {
	t.Helper()
	poll.True(t, d, what, f)
}
