package broker

// Fetch v0-v3 read message formats v0 (v0-v1) and v1 (v2-v3), from clients
// before Kafka 0.11. Kafka 4 stopped serving them (KIP-896); Kafka 3.9
// down-converted the v2 batches it sent them unless the topic's
// message.downconversion.enable was false (then UNSUPPORTED_VERSION), and
// so do we (record.DownConvert). The converted records are copied into the
// response instead of being sent from the file: the region is read with a
// positional read of the segment file, without any lock.

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/record"
)

// firstBatchFetchVersion is the first Fetch version that reads v2 batches.
const firstBatchFetchVersion = 4

// downConvertFetch returns a partition's records, read from region, as the
// message format of a Fetch below v4, at most about limit bytes (the first
// batch whole), or the partition's error code.
func (b *Broker) downConvertFetch(p *partition.Partition, version int16, fetchOffset int64, region fileRegion, limit int) ([]byte, int16) {
	if !p.Config().MessageDownconversionEnable {
		return nil, kerr.UnsupportedVersion.Code
	}
	if region.file == nil || region.length == 0 {
		return []byte{}, 0
	}
	buf := make([]byte, region.length)
	if _, err := region.file.ReadAt(buf, region.offset); err != nil {
		return nil, b.errCode(err)
	}
	magic := int8(1)
	if version <= 1 {
		magic = 0
	}
	out, err := record.DownConvert(buf, magic, fetchOffset, limit)
	if err != nil {
		return nil, b.errCode(err)
	}
	return out, 0
}
