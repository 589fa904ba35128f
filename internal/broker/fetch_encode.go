package broker

// Fetch responses are encoded here rather than by kmsg so that record data
// can stay in the segment files: each partition's records are either bytes
// or a file region that the server sends with sendfile(2). The layout is
// the FetchResponse schema for v4-v16; TestFetchEncodingMatchesKmsg checks
// it byte for byte against kmsg's encoder.

import (
	"os"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
)

// fileRegion is where a partition's record batches lie in a segment file.
type fileRegion struct {
	file   *os.File
	offset int64
	length int64
}

// fetchResponse is a Fetch response whose record batches may be file
// regions: regions[t][p], when its file is set, replaces
// Topics[t].Partitions[p].RecordBatches.
type fetchResponse struct {
	*kmsg.FetchResponse
	regions [][]fileRegion
}

var _ server.ChunkedResponse = (*fetchResponse)(nil)

// AppendChunks implements server.ChunkedResponse.
func (r *fetchResponse) AppendChunks(dst []server.Chunk) []server.Chunk {
	v := r.Version
	flexible := v >= 12
	b := make([]byte, 0, 256)
	if v >= 1 {
		b = kbin.AppendInt32(b, r.ThrottleMillis)
	}
	if v >= 7 {
		b = kbin.AppendInt16(b, r.ErrorCode)
		b = kbin.AppendInt32(b, r.SessionID)
	}
	b = appendArrayLen(b, len(r.Topics), flexible)
	for ti := range r.Topics {
		t := &r.Topics[ti]
		if v <= 12 {
			b = appendString(b, t.Topic, flexible)
		} else {
			b = kbin.AppendUuid(b, t.TopicID)
		}
		b = appendArrayLen(b, len(t.Partitions), flexible)
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			b = kbin.AppendInt32(b, p.Partition)
			b = kbin.AppendInt16(b, p.ErrorCode)
			b = kbin.AppendInt64(b, p.HighWatermark)
			if v >= 4 { // v0-v3 (down-converted) have no last stable offset or aborted transactions
				b = kbin.AppendInt64(b, p.LastStableOffset)
			}
			if v >= 5 {
				b = kbin.AppendInt64(b, p.LogStartOffset)
			}
			switch {
			case v < 4: // see above
			case p.AbortedTransactions == nil:
				b = appendNullArrayLen(b, flexible)
			default:
				b = appendArrayLen(b, len(p.AbortedTransactions), flexible)
				for _, a := range p.AbortedTransactions {
					b = kbin.AppendInt64(b, a.ProducerID)
					b = kbin.AppendInt64(b, a.FirstOffset)
					if flexible {
						b = append(b, 0)
					}
				}
			}
			if v >= 11 {
				b = kbin.AppendInt32(b, p.PreferredReadReplica)
			}
			if reg := r.region(ti, pi); reg.file != nil {
				b = appendBytesLen(b, int(reg.length), flexible)
				dst = append(dst, server.Chunk{Bytes: b}, server.Chunk{File: reg.file, Offset: reg.offset, Length: reg.length})
				b = make([]byte, 0, 128)
			} else if p.RecordBatches == nil {
				b = appendNullBytes(b, flexible)
			} else {
				b = appendBytesLen(b, len(p.RecordBatches), flexible)
				b = append(b, p.RecordBatches...)
			}
			if flexible {
				b = appendPartitionTags(b, p)
			}
		}
		if flexible {
			b = append(b, 0)
		}
	}
	if flexible {
		if len(r.Brokers) == 0 {
			b = append(b, 0)
		} else {
			var body []byte
			body = appendArrayLen(body, len(r.Brokers), true)
			for _, br := range r.Brokers {
				body = kbin.AppendInt32(body, br.NodeID)
				body = appendString(body, br.Host, true)
				body = kbin.AppendInt32(body, br.Port)
				body = kbin.AppendCompactNullableString(body, br.Rack)
				body = append(body, 0)
			}
			b = append(b, 1)                             // one tagged field
			b = kbin.AppendUvarint(b, 0)                 // tag 0: node endpoints (KIP-951)
			b = kbin.AppendUvarint(b, uint32(len(body))) // its size
			b = append(b, body...)
		}
	}
	return append(dst, server.Chunk{Bytes: b})
}

func (r *fetchResponse) region(t, p int) fileRegion {
	if t < len(r.regions) && p < len(r.regions[t]) {
		return r.regions[t][p]
	}
	return fileRegion{}
}

// appendPartitionTags encodes a partition's tagged fields: diverging epoch
// (0), current leader (1, KIP-951) and snapshot id (2), each only when set.
func appendPartitionTags(b []byte, p *kmsg.FetchResponseTopicPartition) []byte {
	diverging := p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1
	leader := p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1
	snapshot := p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1
	n := 0
	for _, set := range []bool{diverging, leader, snapshot} {
		if set {
			n++
		}
	}
	b = kbin.AppendUvarint(b, uint32(n))
	if diverging {
		b = append(b, 0, 13) // tag, size: int32 + int64 + empty tags
		b = kbin.AppendInt32(b, p.DivergingEpoch.Epoch)
		b = kbin.AppendInt64(b, p.DivergingEpoch.EndOffset)
		b = append(b, 0)
	}
	if leader {
		b = append(b, 1, 9) // int32 + int32 + empty tags
		b = kbin.AppendInt32(b, p.CurrentLeader.LeaderID)
		b = kbin.AppendInt32(b, p.CurrentLeader.LeaderEpoch)
		b = append(b, 0)
	}
	if snapshot {
		b = append(b, 2, 13) // int64 + int32 + empty tags
		b = kbin.AppendInt64(b, p.SnapshotID.EndOffset)
		b = kbin.AppendInt32(b, p.SnapshotID.Epoch)
		b = append(b, 0)
	}
	return b
}

func appendArrayLen(b []byte, n int, flexible bool) []byte {
	if flexible {
		return kbin.AppendUvarint(b, uint32(n+1))
	}
	return kbin.AppendInt32(b, int32(n))
}

func appendNullArrayLen(b []byte, flexible bool) []byte {
	if flexible {
		return append(b, 0)
	}
	return kbin.AppendInt32(b, -1)
}

func appendString(b []byte, s string, flexible bool) []byte {
	if flexible {
		return kbin.AppendCompactString(b, s)
	}
	return kbin.AppendString(b, s)
}

func appendBytesLen(b []byte, n int, flexible bool) []byte {
	if flexible {
		return kbin.AppendUvarint(b, uint32(n+1))
	}
	return kbin.AppendInt32(b, int32(n))
}

func appendNullBytes(b []byte, flexible bool) []byte {
	if flexible {
		return append(b, 0)
	}
	return kbin.AppendInt32(b, -1)
}
