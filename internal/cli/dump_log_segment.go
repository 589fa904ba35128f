package cli

// dump-log's .log, .index and .timeindex decoding.

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/storage"
)

// dumpedBatch is one record batch of a .log.
type dumpedBatch struct {
	BaseOffset           int64          `json:"base_offset"`
	LastOffset           int64          `json:"last_offset"`
	Count                int32          `json:"count"`
	BaseSequence         int32          `json:"base_sequence"`
	LastSequence         int32          `json:"last_sequence"`
	ProducerID           int64          `json:"producer_id"`
	ProducerEpoch        int16          `json:"producer_epoch"`
	PartitionLeaderEpoch int32          `json:"partition_leader_epoch"`
	Transactional        bool           `json:"is_transactional"`
	Control              bool           `json:"is_control"`
	Position             int            `json:"position"`
	TimestampType        string         `json:"timestamp_type"`
	MaxTimestamp         int64          `json:"max_timestamp"`
	Size                 int            `json:"size"`
	Magic                int8           `json:"magic"`
	Compression          string         `json:"compression"`
	CRC                  uint32         `json:"crc"`
	Valid                bool           `json:"is_valid"`
	Records              []dumpedRecord `json:"records,omitempty"`
	RecordsError         string         `json:"records_error,omitempty"`
}

type dumpedRecord struct {
	Offset    int64            `json:"offset"`
	Timestamp int64            `json:"timestamp"`
	KeySize   int              `json:"key_size"`
	ValueSize int              `json:"value_size"`
	Sequence  int32            `json:"sequence"`
	Headers   []consumedHeader `json:"headers"`
	Key       *string          `json:"key,omitempty"`
	Value     *string          `json:"value,omitempty"`
	// Control is the transaction marker of a control record.
	Control string `json:"control,omitempty"`
	// Decoded is a __consumer_offsets record with --offsets-decoder.
	Decoded *group.OffsetsRecord `json:"decoded,omitempty"`
}

// readLogPrefix reads a .log, or its first maxBytes bytes.
func readLogPrefix(path string, maxBytes int64) ([]byte, error) {
	if maxBytes <= 0 {
		return os.ReadFile(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxBytes))
}

func dumpSegment(d *dumpedFile, path string, o *dumpOptions) error {
	data, err := readLogPrefix(path, o.maxBytes)
	if err != nil {
		return err
	}
	d.Batches = []dumpedBatch{}
	it := record.NewBatches(data)
	for it.Next() {
		h, raw := it.Header(), it.Batch()
		b := dumpedBatch{BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), Count: h.NumRecords,
			BaseSequence: h.BaseSequence, LastSequence: h.LastSequence(), ProducerID: h.ProducerID,
			ProducerEpoch: h.ProducerEpoch, PartitionLeaderEpoch: h.PartitionLeaderEpoch,
			Transactional: h.IsTransactional(), Control: h.IsControl(), Position: it.Position(),
			TimestampType: h.TimestampType().String(), MaxTimestamp: h.MaxTimestamp, Size: len(raw),
			Magic: h.Magic, Compression: h.Codec().String(), CRC: h.CRC, Valid: record.ComputeCRC(raw) == h.CRC}
		if o.deep {
			if err := decodeDumpedRecords(&b, h, raw, o); err != nil {
				b.RecordsError = err.Error()
			}
		}
		d.Batches = append(d.Batches, b)
	}
	if err := it.Err(); err != nil {
		d.Mismatches = append(d.Mismatches, fmt.Sprintf("Found corrupt data at position %d: %v", len(data)-len(it.Remaining()), err))
	} else if n := len(it.Remaining()); n > 0 && (o.maxBytes <= 0 || int64(len(data)) < o.maxBytes) {
		d.Mismatches = append(d.Mismatches, fmt.Sprintf("Found %d invalid bytes at the end of %s", n, d.File))
	}
	return nil
}

func decodeDumpedRecords(b *dumpedBatch, h record.Header, raw []byte, o *dumpOptions) error {
	_, recs, err := record.DecodeRecords(raw)
	if err != nil {
		return err
	}
	for _, r := range recs {
		dr := dumpedRecord{Offset: h.BaseOffset + int64(r.OffsetDelta), Timestamp: h.FirstTimestamp + r.TimestampDelta,
			KeySize: len(r.Key), ValueSize: len(r.Value), Sequence: h.SequenceAt(r.OffsetDelta), Headers: []consumedHeader{}}
		if r.Key == nil {
			dr.KeySize = -1
		}
		if r.Value == nil {
			dr.ValueSize = -1
		}
		if h.TimestampType() == record.LogAppendTime {
			dr.Timestamp = h.MaxTimestamp
		}
		for _, hd := range r.Headers {
			dr.Headers = append(dr.Headers, consumedHeader{Key: hd.Key, Value: string(hd.Value)})
		}
		switch {
		case h.IsControl():
			dr.Control = controlMarker(r.Key, r.Value)
		case o.offsetsDecoder:
			if rec, ok, err := group.DecodeOffsetsRecord(r.Key, r.Value); err == nil && ok {
				dr.Decoded = &rec
			}
		}
		if o.printData && dr.Decoded == nil && dr.Control == "" {
			dr.Key, _ = bytesField(r.Key)
			dr.Value, _ = bytesField(r.Value)
		}
		b.Records = append(b.Records, dr)
	}
	return nil
}

// controlMarker renders a transaction marker (KIP-98): the key holds a
// version and the type (0 abort, 1 commit), the value a version and the
// coordinator epoch.
func controlMarker(key, value []byte) string {
	if len(key) < 4 {
		return "unknown control record"
	}
	typ := "UNKNOWN"
	switch binary.BigEndian.Uint16(key[2:]) {
	case 0:
		typ = "ABORT"
	case 1:
		typ = "COMMIT"
	}
	if len(value) >= 6 {
		return fmt.Sprintf("endTxnMarker: %s coordinatorEpoch: %d", typ, int32(binary.BigEndian.Uint32(value[2:])))
	}
	return "endTxnMarker: " + typ
}

func printBatch(w io.Writer, b dumpedBatch, o *dumpOptions) {
	fmt.Fprintf(w, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t\n",
		b.BaseOffset, b.LastOffset, b.Count, b.BaseSequence, b.LastSequence, b.ProducerID, b.ProducerEpoch,
		b.PartitionLeaderEpoch, b.Transactional, b.Control, b.Position, b.TimestampType, b.MaxTimestamp, b.Size,
		b.Magic, b.Compression, b.CRC, b.Valid)
	if b.RecordsError != "" {
		fmt.Fprintf(w, "| records cannot be decoded: %s\n", b.RecordsError)
	}
	for _, r := range b.Records {
		keys := make([]string, len(r.Headers))
		for i, h := range r.Headers {
			keys[i] = h.Key
		}
		fmt.Fprintf(w, "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s]",
			r.Offset, b.TimestampType, r.Timestamp, r.KeySize, r.ValueSize, r.Sequence, strings.Join(keys, ","))
		switch {
		case r.Control != "":
			fmt.Fprintf(w, " %s", r.Control)
		case r.Decoded != nil:
			k, _ := json.Marshal(r.Decoded.Key)
			fmt.Fprintf(w, " key: %s", k)
			if r.Decoded.Payload == nil {
				fmt.Fprint(w, " payload: <DELETE>")
			} else {
				p, _ := json.Marshal(r.Decoded.Payload)
				fmt.Fprintf(w, " payload: %s", p)
			}
		case o.printData:
			parts := make([]string, len(r.Headers))
			for i, h := range r.Headers {
				parts[i] = h.Key + "=" + h.Value
			}
			fmt.Fprintf(w, " headers: [%s] key: %s payload: %s", strings.Join(parts, ","), nullable(r.Key), nullable(r.Value))
		}
		fmt.Fprintln(w)
	}
}

func nullable(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

// siblingLog returns the .log of the segment an index belongs to.
func siblingLog(indexPath, suffix string) string {
	return strings.TrimSuffix(indexPath, suffix) + storage.LogFileSuffix
}

// dumpOffsetIndex decodes an .index and checks each entry against the
// segment's .log, as kafka-dump-log.sh does: the batch at the entry's
// position must end at the entry's offset.
func dumpOffsetIndex(d *dumpedFile, path string, base int64, o *dumpOptions) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	logData, logErr := os.ReadFile(siblingLog(path, storage.IndexFileSuffix))
	logSize := int64(-1)
	if logErr == nil {
		logSize = int64(len(logData))
	}
	entries, err := storage.ReadOffsetIndex(path, base, logSize)
	if o.indexSanity {
		d.Sanity, d.sanityFailed = sanityVerdict(d.File, err), err != nil
		return nil
	}
	if err != nil {
		return err
	}
	d.IndexEntries = entries
	if logErr != nil {
		d.Mismatches = append(d.Mismatches, fmt.Sprintf("cannot check against the log: %v", logErr))
		return nil
	}
	for _, e := range entries {
		h, _, _, err := record.NextBatch(logData[e.Position:])
		switch {
		case err != nil:
			d.Mismatches = append(d.Mismatches, fmt.Sprintf("Index offset: %d, no batch at position %d: %v", e.Offset, e.Position, err))
		case h.LastOffset() != e.Offset:
			d.Mismatches = append(d.Mismatches, fmt.Sprintf("Index offset: %d, log offset: %d", e.Offset, h.LastOffset()))
		}
	}
	return nil
}

// dumpTimeIndex decodes a .timeindex and checks each entry against the
// log: some batch must end at the entry's offset with the entry's
// timestamp as its maximum.
func dumpTimeIndex(d *dumpedFile, path string, base int64, o *dumpOptions) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	entries, err := storage.ReadTimeIndex(path, base)
	if o.indexSanity {
		d.Sanity, d.sanityFailed = sanityVerdict(d.File, err), err != nil
		return nil
	}
	if err != nil {
		return err
	}
	d.TimeIndexEntries = entries
	logData, err := os.ReadFile(siblingLog(path, storage.TimeIndexFileSuffix))
	if err != nil {
		d.Mismatches = append(d.Mismatches, fmt.Sprintf("cannot check against the log: %v", err))
		return nil
	}
	maxTs := map[int64]int64{} // batch last offset -> max timestamp
	for it := record.NewBatches(logData); it.Next(); {
		maxTs[it.Header().LastOffset()] = it.Header().MaxTimestamp
	}
	for _, e := range entries {
		ts, ok := maxTs[e.Offset]
		switch {
		case !ok:
			d.Mismatches = append(d.Mismatches, fmt.Sprintf("Index offset: %d, no batch ends there", e.Offset))
		case ts != e.Timestamp:
			d.Mismatches = append(d.Mismatches, fmt.Sprintf("Index timestamp: %d, log timestamp: %d", e.Timestamp, ts))
		}
	}
	return nil
}

func sanityVerdict(path string, err error) string {
	if err != nil {
		return fmt.Sprintf("%s failed sanity check: %v", path, err)
	}
	return fmt.Sprintf("%s passed sanity check.", path)
}
