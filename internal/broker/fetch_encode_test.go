package broker

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// randomFetchResponse builds a response exercising every field our encoder
// writes: nullable aborted transactions, null and empty record sets, every
// partition tag, node endpoints.
func randomFetchResponse(rng *rand.Rand, version int16) *kmsg.FetchResponse {
	r := kmsg.NewPtrFetchResponse()
	r.SetVersion(version)
	r.ThrottleMillis = rng.Int32()
	r.ErrorCode = int16(rng.IntN(100))
	r.SessionID = rng.Int32()
	for t := 0; t < rng.IntN(4); t++ {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = string(rune('a'+t)) + "-topic"
		rt.TopicID = [16]byte{byte(t + 1), 2, 3}
		for p := 0; p < rng.IntN(4); p++ {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = int32(p)
			rp.ErrorCode = int16(rng.IntN(3))
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = rng.Int64(), rng.Int64(), rng.Int64()
			if rng.IntN(2) == 0 {
				rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
				for a := 0; a < rng.IntN(3); a++ {
					rp.AbortedTransactions = append(rp.AbortedTransactions, kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: rng.Int64(), FirstOffset: rng.Int64()})
				}
			}
			rp.PreferredReadReplica = rng.Int32()
			switch rng.IntN(3) {
			case 0:
				rp.RecordBatches = nil
			case 1:
				rp.RecordBatches = []byte{}
			default:
				rp.RecordBatches = bytes.Repeat([]byte{byte(p)}, 1+rng.IntN(300))
			}
			if rng.IntN(2) == 0 {
				rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = rng.Int32(), rng.Int64()
			}
			if rng.IntN(2) == 0 {
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = rng.Int32(), rng.Int32()
			}
			if rng.IntN(2) == 0 {
				rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch = rng.Int64(), rng.Int32()
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	if rng.IntN(2) == 0 {
		rack := "rack-1"
		r.Brokers = []kmsg.FetchResponseBroker{{NodeID: 1, Host: "h1", Port: 9092}, {NodeID: 2, Host: "h2", Port: 9093, Rack: &rack}}
	}
	return r
}

// materialize concatenates chunks, reading file regions.
func materialize(t *testing.T, chunks []chunkView) []byte {
	t.Helper()
	var out []byte
	for _, c := range chunks {
		if c.file == nil {
			out = append(out, c.bytes...)
			continue
		}
		b, err := io.ReadAll(io.NewSectionReader(c.file, c.offset, c.length))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

type chunkView struct {
	bytes          []byte
	file           *os.File
	offset, length int64
}

func TestFetchEncodingMatchesKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	segment, err := os.CreateTemp(t.TempDir(), "segment")
	if err != nil {
		t.Fatal(err)
	}
	defer segment.Close()
	for version := int16(4); version <= 16; version++ {
		for i := 0; i < 50; i++ {
			resp := randomFetchResponse(rng, version)
			want := resp.AppendTo(nil)

			// Move some record sets into the "segment" file, as
			// regions, and check the chunks still add up to kmsg's
			// encoding.
			fr := &fetchResponse{FetchResponse: resp}
			for ti, tp := range resp.Topics {
				fr.regions = append(fr.regions, make([]fileRegion, len(tp.Partitions)))
				for pi, p := range tp.Partitions {
					if len(p.RecordBatches) > 0 && rng.IntN(2) == 0 {
						off, _ := segment.Seek(0, io.SeekEnd)
						segment.Write(p.RecordBatches)
						fr.regions[ti][pi] = fileRegion{file: segment, offset: off, length: int64(len(p.RecordBatches))}
					}
				}
			}
			var views []chunkView
			for _, c := range fr.AppendChunks(nil) {
				views = append(views, chunkView{bytes: c.Bytes, file: c.File, offset: c.Offset, length: c.Length})
			}
			if got := materialize(t, views); !bytes.Equal(got, want) {
				t.Fatalf("v%d case %d: encoding differs from kmsg\n got %x\nwant %x", version, i, got, want)
			}
		}
	}
}
