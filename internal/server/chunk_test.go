package server

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fileBackedResponse encodes a Metadata response and serves the middle of
// its body from a file, as fetch serves record batches from segments.
type fileBackedResponse struct {
	*kmsg.MetadataResponse
	file *os.File
}

func (r *fileBackedResponse) AppendChunks(dst []Chunk) []Chunk {
	body := r.MetadataResponse.AppendTo(nil)
	third := len(body) / 3
	off, _ := r.file.Seek(0, io.SeekEnd)
	r.file.Write([]byte("junk before"))
	r.file.Write(body[third : 2*third])
	r.file.Write([]byte("junk after"))
	return append(dst,
		Chunk{Bytes: body[:third]},
		Chunk{File: r.file, Offset: off + int64(len("junk before")), Length: int64(2*third - third)},
		Chunk{Bytes: body[2*third:]},
	)
}

type chunkHandler struct{ file *os.File }

func (h chunkHandler) VersionRange(key int16) (int16, int16, bool) {
	return 0, 12, kmsg.Key(key) == kmsg.Metadata
}

func (h chunkHandler) Handle(_ context.Context, r *Request) (kmsg.Response, error) {
	resp := r.Body.(*kmsg.MetadataRequest).ResponseKind().(*kmsg.MetadataResponse)
	resp.ControllerID = 7
	host := "a-long-enough-host-name-to-split-across-chunks.example"
	for i := int32(0); i < 20; i++ {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = i, host, 9000+i
		resp.Brokers = append(resp.Brokers, b)
	}
	return &fileBackedResponse{MetadataResponse: resp, file: h.file}, nil
}

// File regions in a chunked response reach the client intact (sendfile on
// TCP), interleaved with ordinary responses in order.
func TestChunkedResponsesSendFileRegions(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "segment")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := New(Config{Listeners: []ListenerConfig{{Name: "PLAINTEXT", Addr: "127.0.0.1:0"}}}, chunkHandler{file: f}, slog.New(slog.DiscardHandler))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := dial(t, s.Addrs()["PLAINTEXT"].String())
	for v := int16(0); v <= 12; v++ {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		c.Write(encodeRequest(req, int32(v), "chunks"))
	}
	for v := int16(0); v <= 12; v++ {
		resp := kmsg.NewPtrMetadataResponse()
		resp.SetVersion(v)
		if corr := readResponse(t, c, resp); corr != int32(v) {
			t.Fatalf("correlation id %d, want %d", corr, v)
		}
		if len(resp.Brokers) != 20 || resp.Brokers[19].Port != 9019 {
			t.Fatalf("v%d: brokers decoded wrong: %+v", v, resp.Brokers)
		}
		if v >= 1 && resp.ControllerID != 7 {
			t.Fatalf("v%d: controller id %d", v, resp.ControllerID)
		}
	}
}
