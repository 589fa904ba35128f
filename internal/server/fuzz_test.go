package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzDecodeRequest feeds arbitrary frames through the request decoding the
// connection does: header, tagged fields, body. Invariant: it never panics;
// a frame either decodes or yields an error.
func FuzzDecodeRequest(f *testing.F) {
	for _, req := range []kmsg.Request{
		func() kmsg.Request { r := kmsg.NewPtrMetadataRequest(); r.SetVersion(12); return r }(),
		func() kmsg.Request { r := kmsg.NewPtrApiVersionsRequest(); r.SetVersion(3); return r }(),
		func() kmsg.Request {
			r := kmsg.NewPtrProduceRequest()
			r.SetVersion(9)
			r.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: []byte{1, 2, 3}}}}}
			return r
		}(),
		func() kmsg.Request { r := kmsg.NewPtrFetchRequest(); r.SetVersion(16); return r }(),
	} {
		f.Add(encodeRequest(req, 1, "fuzz")[4:])
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, body, err := parseHeader(frame)
		if err != nil {
			return
		}
		req := kmsg.RequestForKey(h.key)
		if req == nil || h.version < 0 || h.version > req.MaxVersion() {
			return
		}
		req.SetVersion(h.version)
		if req.IsFlexible() {
			if body, err = skipTags(body); err != nil {
				return
			}
		}
		_ = req.ReadFrom(body)
	})
}
