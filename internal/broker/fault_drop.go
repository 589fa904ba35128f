package broker

import (
	"os"
	"strconv"
	"sync/atomic"

	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/storage"
)

// DropAckedWritesEnv names the test-only fault switch that makes this
// broker lose acknowledged writes: with VLTAVA_TEST_DROP_ACKED_WRITES=N,
// every Nth produced batch is acknowledged with an offset but never
// appended. It exists so `vltava verify` can be shown to find a loss (the
// cluster tests set it, like VLTAVA_TEST_FAULT_TRIGGER_FILE); nothing else
// reads it, and unset (the only production state) it costs one atomic load
// per batch.
const DropAckedWritesEnv = "VLTAVA_TEST_DROP_ACKED_WRITES"

// dropAckedEvery is N of the switch, 0 when it is off.
var dropAckedEvery = func() int64 {
	n, err := strconv.ParseInt(os.Getenv(DropAckedWritesEnv), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}()

var producedBatches atomic.Int64

// dropAckedWrite reports whether the fault switch drops this batch, and if
// so the acknowledgement it gets: the log end offset, where the next batch
// will really go, so the loss also shows as an offset reused.
func dropAckedWrite(p *partition.Partition) (storage.AppendInfo, bool) {
	if dropAckedEvery == 0 || producedBatches.Add(1)%dropAckedEvery != 0 {
		return storage.AppendInfo{}, false
	}
	leo := p.LogEndOffset()
	return storage.AppendInfo{BaseOffset: leo, LastOffset: leo - 1, LogAppendTime: -1, LogStartOffset: p.LogStartOffset()}, true
}
