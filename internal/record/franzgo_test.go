package record

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestFranzGoClientBatchesValidate produces through a real franz-go client
// (its own record encoder and compressors: raw snappy, lz4 frames, zstd,
// gzip) into kfake, fetches the stored batches back byte for byte and runs
// them through ValidateProduce and DecodeRecords.
func TestFranzGoClientBatchesValidate(t *testing.T) {
	codecs := map[Codec]kgo.CompressionCodec{
		CodecNone: kgo.NoCompression(), CodecGzip: kgo.GzipCompression(), CodecSnappy: kgo.SnappyCompression(),
		CodecLZ4: kgo.Lz4Compression(), CodecZstd: kgo.ZstdCompression(),
	}
	for c, kc := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
			if err != nil {
				t.Fatal(err)
			}
			defer cluster.Close()
			cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ProducerBatchCompression(kc),
				kgo.DefaultProduceTopic("t"), kgo.MaxVersions(kversion.V3_0_0())) // fetch by topic name
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var recs []*kgo.Record
			for i := range 20 {
				recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte(fmt.Sprintf("value %d %0200d", i, i)),
					Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}})
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			req := kmsg.NewPtrFetchRequest()
			req.MaxWaitMillis, req.MaxBytes = 100, 1<<20
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("fetch failed: %+v", resp)
			}
			data := resp.Topics[0].Partitions[0].RecordBatches
			it := NewBatches(data)
			total := 0
			for it.Next() {
				batch := append([]byte(nil), it.Batch()...)
				if it.Header().Codec() != c {
					t.Fatalf("client wrote codec %s", it.Header().Codec())
				}
				SetBaseOffset(batch, 0) // as the client sent it
				opts := permissive()
				opts.Now = time.Now().UnixMilli()
				opts.Compacted = true
				v, err := ValidateProduce(batch, opts)
				if err != nil {
					t.Fatalf("franz-go batch rejected: %v", err)
				}
				_, dec, err := DecodeRecords(v.Batch)
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range dec {
					if want := fmt.Sprintf("k%d", total+i); string(r.Key) != want || len(r.Headers) != 1 {
						t.Fatalf("record %d: key %q headers %v", total+i, r.Key, r.Headers)
					}
				}
				total += len(dec)
			}
			if it.Err() != nil || total != len(recs) {
				t.Fatalf("fetched %d records (err %v), want %d", total, it.Err(), len(recs))
			}
		})
	}
}
