package broker

// Fetch before v10 and zstd (KIP-110). Clients that fetch below v10 predate
// zstd and cannot decode it, so such a fetch gets UNSUPPORTED_COMPRESSION_TYPE
// for the partition. Kafka decides from the topic's compression.type alone
// (KafkaApis.maybeConvertFetchedData); with compression.type=producer a
// zstd batch written by a newer producer would still reach the old client,
// so the records to send are checked too, batch header by batch header: a
// zstd batch at the start is the error, one further on ends the region there
// (the client gets the batches before it and meets the error on its next
// fetch, from the zstd batch's offset).

import (
	"encoding/binary"

	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/record"
)

// firstZstdFetchVersion is the first Fetch version whose clients know zstd.
const firstZstdFetchVersion = 10

// batchAttrsEnd is how much of a batch header holds everything up to and
// including its attributes: base offset, length, leader epoch, magic, CRC,
// attributes.
const batchAttrsEnd = 23

// zstdForOldFetch applies the rule to one partition read for a fetch below
// v10: refused reports UNSUPPORTED_COMPRESSION_TYPE; otherwise the region
// to send.
func zstdForOldFetch(p *partition.Partition, region fileRegion) (_ fileRegion, refused bool) {
	if p.Config().CompressionType == "zstd" {
		return fileRegion{}, true
	}
	if region.file == nil {
		return region, false
	}
	return cutAtZstd(region)
}

// cutAtZstd returns the part of region before its first zstd batch and
// whether that part is empty because the first batch is zstd. The region
// starts with a whole batch; a partial trailing header is left as it is
// (clients drop a partial batch). Reads are positional reads of the segment
// file, made without any lock.
func cutAtZstd(region fileRegion) (fileRegion, bool) {
	var hdr [batchAttrsEnd]byte
	for pos := int64(0); pos+batchAttrsEnd <= region.length; {
		if _, err := region.file.ReadAt(hdr[:], region.offset+pos); err != nil {
			return region, false
		}
		attrs := binary.BigEndian.Uint16(hdr[21:23])
		if record.Codec(attrs&0x07) == record.CodecZstd {
			if pos == 0 {
				return fileRegion{}, true
			}
			region.length = pos
			return region, false
		}
		length := int32(binary.BigEndian.Uint32(hdr[8:12]))
		if length <= 0 {
			return region, false // not a batch the log could hold; sent as it is
		}
		pos += record.LengthFieldEnd + int64(length)
	}
	return region, false
}
