package txn

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/testing/freeport"
)

// stubLeader is a partition leader speaking just enough of the Kafka
// protocol: ApiVersions (advertising WriteTxnMarkers up to maxVersion, or
// not at all when it is negative) and WriteTxnMarkers, answered NONE for
// every partition; it records the WriteTxnMarkers requests.
type stubLeader struct {
	ln         net.Listener
	maxVersion int16
	mu         sync.Mutex
	got        []*kmsg.WriteTxnMarkersRequest
}

func startStubLeader(t *testing.T, maxVersion int16) *stubLeader {
	ln, err := net.Listen("tcp", freeport.Addr(t))
	if err != nil {
		t.Fatal(err)
	}
	s := &stubLeader{ln: ln, maxVersion: maxVersion}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *stubLeader) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(r, frame); err != nil {
			return
		}
		key, version := int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:]))
		corr := binary.BigEndian.Uint32(frame[4:])
		body := frame[8:]
		idLen := int16(binary.BigEndian.Uint16(body))
		body = body[2:]
		if idLen > 0 {
			body = body[idLen:]
		}
		req := kmsg.RequestForKey(key)
		req.SetVersion(version)
		if req.IsFlexible() {
			body = body[1:] // no tagged fields in our requests
		}
		if err := req.ReadFrom(body); err != nil {
			return
		}
		var resp kmsg.Response
		switch rq := req.(type) {
		case *kmsg.ApiVersionsRequest:
			av := rq.ResponseKind().(*kmsg.ApiVersionsResponse)
			if s.maxVersion >= 0 {
				k := kmsg.NewApiVersionsResponseApiKey()
				k.ApiKey, k.MaxVersion = int16(kmsg.WriteTxnMarkers), s.maxVersion
				av.ApiKeys = append(av.ApiKeys, k)
			}
			resp = av
		case *kmsg.WriteTxnMarkersRequest:
			s.mu.Lock()
			s.got = append(s.got, rq)
			s.mu.Unlock()
			wr := rq.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
			for _, m := range rq.Markers {
				rm := kmsg.NewWriteTxnMarkersResponseMarker()
				rm.ProducerID = m.ProducerID
				for _, t := range m.Topics {
					rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
						rp.Partition = p
						rt.Partitions = append(rt.Partitions, rp)
					}
					rm.Topics = append(rm.Topics, rt)
				}
				wr.Markers = append(wr.Markers, rm)
			}
			resp = wr
		default:
			return
		}
		resp.SetVersion(version)
		out := binary.BigEndian.AppendUint32(nil, corr)
		if resp.IsFlexible() && key != int16(kmsg.ApiVersions) {
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(out))), out...))
	}
}

// imageWithLeader is an image where broker 2 (at addr) leads t-0.
func imageWithLeader(t *testing.T, addr string) *metadata.Image {
	host, port, _ := net.SplitHostPort(addr)
	var p int
	for _, c := range port {
		p = p*10 + int(c-'0')
	}
	id := metadata.NewUuid()
	img, err := metadata.EmptyImage().Apply(0, []metadata.Record{
		&metadata.RegisterBrokerRecord{BrokerID: 2, Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: host, Port: int32(p)}}},
		&metadata.TopicRecord{Name: "t", TopicID: id},
		&metadata.PartitionRecord{TopicID: id, Partition: 0, Replicas: []int32{2}, ISR: []int32{2}, Leader: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestNetTransport sends WriteTxnMarkers to a partition's leader at the
// version the leader advertises, and refuses a leader that serves none.
func TestNetTransport(t *testing.T) {
	s := startStubLeader(t, 1)
	img := imageWithLeader(t, s.ln.Addr().String())
	tr := &NetTransport{Image: func() *metadata.Image { return img }, Listener: "PLAINTEXT", ClientID: "test"}
	defer tr.Close()
	leader, ok, exists := tr.Leader(TopicPartition{"t", 0})
	if leader != 2 || !ok || !exists {
		t.Fatalf("Leader(t-0) = %d %v %v", leader, ok, exists)
	}
	if _, _, exists := tr.Leader(TopicPartition{"gone", 0}); exists {
		t.Error("a missing topic exists")
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 7, 3, true, 5
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "t", []int32{0}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := tr.WriteTxnMarkers(ctx, 2, req)
	if err != nil {
		t.Fatalf("WriteTxnMarkers: %v", err)
	}
	if len(resp.Markers) != 1 || resp.Markers[0].ProducerID != 7 || resp.Markers[0].Topics[0].Partitions[0].ErrorCode != 0 {
		t.Errorf("response %+v", resp)
	}
	s.mu.Lock()
	got := s.got
	s.mu.Unlock()
	if len(got) != 1 || got[0].Version != 1 || got[0].Markers[0].CoordinatorEpoch != 5 || !got[0].Markers[0].Committed {
		t.Errorf("leader received %+v, want one v1 commit marker at coordinator epoch 5", got)
	}

	none := startStubLeader(t, -1)
	img = imageWithLeader(t, none.ln.Addr().String())
	tr2 := &NetTransport{Image: func() *metadata.Image { return img }, Listener: "PLAINTEXT", ClientID: "test"}
	defer tr2.Close()
	if _, err := tr2.WriteTxnMarkers(ctx, 2, req); err != ErrMarkersUnsupported {
		t.Errorf("to a leader without WriteTxnMarkers: %v, want ErrMarkersUnsupported", err)
	}
}
