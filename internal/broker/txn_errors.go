package broker

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// txnErrCode is errCode for the transaction APIs: KIP-588 (Kafka 2.7)
// introduced PRODUCER_FENCED; requests older than the version that
// introduced it (fencedSince) get INVALID_PRODUCER_EPOCH instead, as
// Kafka's handlers map it.
func (b *Broker) txnErrCode(err error, version, fencedSince int16) int16 {
	if version < fencedSince && errors.Is(err, kerr.ProducerFenced) {
		return kerr.InvalidProducerEpoch.Code
	}
	return b.errCode(err)
}

// errNoTxnCoordinator answers transaction requests on a broker assembled
// without a transaction coordinator (tests of other APIs).
var errNoTxnCoordinator = fmt.Errorf("%w: no transaction coordinator on this broker", kerr.CoordinatorNotAvailable)
