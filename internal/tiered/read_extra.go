package tiered

import (
	"context"
	"encoding/binary"
	"errors"
	"io"

	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/storage"
)

// AbortedTransactions returns the aborted transactions a read_committed
// fetch of [from, upTo) must report from the remote tier: those in the txn
// indexes of the remote segments the range touches.
func (m *Manager) AbortedTransactions(ctx context.Context, p *partition.Partition, from, upTo int64) ([]storage.AbortedTxn, error) {
	var out []storage.AbortedTxn
	for _, md := range m.Meta.Segments(p.TopicID, p.Index, CopyFinished) {
		if md.EndOffset < from || md.StartOffset >= upTo {
			continue
		}
		rc, err := m.Store.FetchIndex(ctx, md, TransactionIndex)
		if errors.Is(err, ErrNotFound) {
			continue // no aborted transaction in that segment
		}
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
		entries, err := storage.DecodeTxnIndex(b, md.EndOffset+1)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.LastOffset >= from && e.FirstOffset < upTo {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// OffsetForTimestamp is ListOffsets by timestamp over the remote tier: the
// first record at or after ts in a remote segment that starts below the
// local log (the local log answers the rest).
func (m *Manager) OffsetForTimestamp(ctx context.Context, p *partition.Partition, ts int64) (offset, timestamp int64, epoch int32, ok bool, err error) {
	localStart := p.Log().LogStartOffset()
	// Records below the log start (DeleteRecords moved it into the remote
	// tier) are gone to clients even while their segment is kept for the
	// records above it.
	floor := p.Log().EarliestOffset()
	for _, md := range m.Meta.Segments(p.TopicID, p.Index, CopyFinished) {
		if md.StartOffset >= localStart {
			break
		}
		if md.MaxTimestamp < ts || md.EndOffset < floor {
			continue
		}
		start, err := m.timeIndexOffset(ctx, md, ts)
		if err != nil {
			return 0, 0, 0, false, err
		}
		for off := max(start, floor); off <= md.EndOffset; {
			data, err := m.read(ctx, md, off, 1<<20, true)
			if err != nil {
				return 0, 0, 0, false, err
			}
			if len(data) == 0 {
				break
			}
			for len(data) >= record.BatchHeaderSize {
				h, err := record.ParseHeader(data)
				if err != nil {
					return 0, 0, 0, false, err
				}
				size := 12 + int(h.Length)
				if size > len(data) {
					break
				}
				batch := data[:size]
				data = data[size:]
				off = h.LastOffset() + 1
				if h.MaxTimestamp < ts || h.LastOffset() < max(md.StartOffset, floor) {
					continue
				}
				if o, t, ok := recordAtOrAfter(batch, h, ts, floor); ok {
					return o, t, max(h.PartitionLeaderEpoch, -1), true, nil
				}
			}
		}
	}
	return -1, -1, -1, false, nil
}

// recordAtOrAfter is the first record of batch at or after offset floor
// whose timestamp is at least ts.
func recordAtOrAfter(batch []byte, h record.Header, ts, floor int64) (int64, int64, bool) {
	_, recs, err := record.DecodeRecords(batch)
	if err != nil {
		return max(h.BaseOffset, floor), h.MaxTimestamp, true // as the local lookup: the batch's start
	}
	for i := range recs {
		if h.BaseOffset+int64(recs[i].OffsetDelta) < floor {
			continue
		}
		t := h.FirstTimestamp + recs[i].TimestampDelta
		if h.TimestampType() == record.LogAppendTime {
			t = h.MaxTimestamp
		}
		if t >= ts {
			return h.BaseOffset + int64(recs[i].OffsetDelta), t, true
		}
	}
	return 0, 0, false
}

// timeIndexOffset is the offset the segment's time index gives for ts: the
// batch that first reached the largest indexed timestamp <= ts, or the
// segment's start.
func (m *Manager) timeIndexOffset(ctx context.Context, md SegmentMetadata, ts int64) (int64, error) {
	rc, err := m.Store.FetchIndex(ctx, md, TimeIndex)
	if err != nil {
		return 0, err
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return 0, err
	}
	off := md.StartOffset
	for i := 0; i+12 <= len(b); i += 12 {
		t := int64(binary.BigEndian.Uint64(b[i:]))
		rel := int64(binary.BigEndian.Uint32(b[i+8:]))
		if t == 0 && rel == 0 && i > 0 {
			break
		}
		if t > ts {
			break
		}
		off = md.StartOffset + rel
	}
	return off, nil
}
