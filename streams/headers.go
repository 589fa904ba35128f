package streams

import "github.com/twmb/franz-go/pkg/kgo"

func toKgoHeaders(hs []Header) []kgo.RecordHeader {
	if hs == nil {
		return nil
	}
	out := make([]kgo.RecordHeader, len(hs))
	for i, h := range hs {
		out[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
	}
	return out
}

func fromKgoHeaders(hs []kgo.RecordHeader) []Header {
	if hs == nil {
		return nil
	}
	out := make([]Header, len(hs))
	for i, h := range hs {
		out[i] = Header{Key: h.Key, Value: h.Value}
	}
	return out
}
