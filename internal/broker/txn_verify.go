package broker

// Transaction verification (KIP-890 part 1). Before a partition leader
// appends the batch that opens a producer's transaction on a partition, it
// asks the producer's transaction coordinator whether the partition was
// added to that transaction: AddPartitionsToTxn v4+ with verify_only, sent
// broker to broker. A hanging transaction (data written after the
// coordinator ended the transaction, which would hold the last stable
// offset back for ever) can then not start. Under KIP-890 part 2 (Produce
// v12+, TxnOffsetCommit v5+: clients at transaction.version 2, which send
// no AddPartitionsToTxn / AddOffsetsToTxn of their own) the same request,
// without verify_only, adds the partition to the transaction, as Kafka's
// AddPartitionsToTxnManager does for its ADD_PARTITION operation.
//
// The coordinator is the leader of the __transaction_state partition
// abs(javaHashCode(transactional id)) % transaction.state.log.num.partitions,
// found in the metadata image and reached on its inter-broker listener, as
// Kafka's AddPartitionsToTxnManager does. Its answer for the partition is
// the produce error: INVALID_TXN_STATE (not added, or the transaction is
// over), TRANSACTION_ABORTABLE, INVALID_PRODUCER_EPOCH (also for the
// coordinator's PRODUCER_FENCED, as Kafka maps it: the producer aborts
// rather than dies), ... Like Kafka, the coordinator errors a producer
// cannot act on (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS, or no answer)
// become NOT_ENOUGH_REPLICAS, which every client retries, and
// TRANSACTION_ABORTABLE becomes INVALID_TXN_STATE for Produce v10 and
// below, whose clients do not know it.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security/clientauth"
)

// TxnVerifier asks a producer's transaction coordinator whether a partition
// is part of its ongoing transaction. Errors wrap the coordinator's kerr
// code. The broker's default sends AddPartitionsToTxn with verify_only;
// tests substitute a fake.
type TxnVerifier interface {
	VerifyTransaction(ctx context.Context, img *metadata.Image, txn TxnPartition) error
	Close()
}

// TxnPartition is one partition a transactional produce writes.
type TxnPartition struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Topic           string
	Partition       int32
	// Add asks the coordinator to add the partition (KIP-890 part 2)
	// rather than only verify it.
	Add bool
}

// coordinatorVerifier is the TxnVerifier over the Kafka protocol. It keeps
// one client per coordinator address; mu guards only that map, never a
// request.
type coordinatorVerifier struct {
	partitions int32  // transaction.state.log.num.partitions
	listener   string // the inter-broker listener name
	nodeID     int32
	timeout    time.Duration // request.timeout.ms, bounding one verification
	security   []kgo.Opt     // the inter-broker listener's TLS and SASL

	mu      sync.Mutex
	clients map[string]*kgo.Client
	closed  bool
}

// newCoordinatorVerifier connects to coordinators as sec says (nil:
// PLAINTEXT), as the replica fetchers connect to leaders.
func newCoordinatorVerifier(partitions int32, listener string, nodeID int32, timeout time.Duration, sec *clientauth.Security) *coordinatorVerifier {
	v := &coordinatorVerifier{partitions: max(partitions, 1), listener: listener, nodeID: nodeID, timeout: timeout, clients: make(map[string]*kgo.Client)}
	if sec != nil {
		v.security = sec.KgoOpts()
	}
	return v
}

// verifyOnlyVersions pins AddPartitionsToTxn to v4 or above, the first
// with verify_only: a coordinator that speaks only older versions cannot
// verify, and the request is not sent.
var verifyOnlyVersions = kversion.FromApiVersionsResponse(&kmsg.ApiVersionsResponse{
	ApiKeys: []kmsg.ApiVersionsResponseApiKey{{ApiKey: int16(kmsg.AddPartitionsToTxn), MinVersion: 4, MaxVersion: 4}},
})

var errVerifierClosed = errors.New("broker is shutting down")

func (v *coordinatorVerifier) client(addr string) (*kgo.Client, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil, errVerifierClosed
	}
	if cl := v.clients[addr]; cl != nil {
		return cl, nil
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.MinVersions(verifyOnlyVersions),
		kgo.ClientID("vltava-txn-verification-" + strconv.Itoa(int(v.nodeID)))}, v.security...)...)
	if err != nil {
		return nil, err
	}
	v.clients[addr] = cl
	return cl, nil
}

// coordinatorAddr is the inter-broker address of the leader of txnID's
// __transaction_state partition.
func (v *coordinatorVerifier) coordinatorAddr(img *metadata.Image, txnID string) (string, error) {
	idx := group.PartitionFor(txnID, v.partitions)
	pi, ok := img.Partition(metadata.TransactionStateTopic, idx)
	if !ok || pi.Leader < 0 {
		return "", fmt.Errorf("%w: no leader for %s-%d", kerr.CoordinatorNotAvailable, metadata.TransactionStateTopic, idx)
	}
	br, ok := img.Broker(pi.Leader)
	if !ok || len(br.Endpoints) == 0 {
		return "", fmt.Errorf("%w: coordinator %d has no endpoint", kerr.CoordinatorNotAvailable, pi.Leader)
	}
	ep := br.Endpoints[0]
	for _, e := range br.Endpoints {
		if e.Name == v.listener {
			ep = e
			break
		}
	}
	return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), nil
}

func (v *coordinatorVerifier) VerifyTransaction(ctx context.Context, img *metadata.Image, txn TxnPartition) error {
	addr, err := v.coordinatorAddr(img, txn.TransactionalID)
	if err != nil {
		return err
	}
	cl, err := v.client(addr)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	t := kmsg.NewAddPartitionsToTxnRequestTransaction()
	t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = txn.TransactionalID, txn.ProducerID, txn.ProducerEpoch, !txn.Add
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = txn.Topic, []int32{txn.Partition}
	t.Topics = append(t.Topics, tt)
	req.Transactions = append(req.Transactions, t)
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return fmt.Errorf("%w: no connection to the coordinator", kerr.CoordinatorNotAvailable)
	}
	if v.timeout > 0 {
		// A coordinator that does not answer fails the verification
		// (retriable), as Kafka's inter-broker send times out.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, v.timeout)
		defer cancel()
	}
	resp, err := req.RequestWith(ctx, seeds[0])
	if err != nil {
		return fmt.Errorf("%w: asking the transaction coordinator at %s: %v", kerr.CoordinatorNotAvailable, addr, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if errors.Is(err, kerr.ClusterAuthorizationFailed) {
			// This broker lacks CLUSTER_ACTION at the coordinator, which
			// the producer cannot act on: Kafka's AddPartitionsToTxnManager
			// answers INVALID_TXN_STATE (the verification did not
			// complete) rather than expose the cluster refusal.
			return fmt.Errorf("%w: the transaction coordinator refused this broker's verification: %v", kerr.InvalidTxnState, err)
		}
		return err
	}
	for _, rt := range resp.Transactions {
		if rt.TransactionalID != txn.TransactionalID {
			continue
		}
		for _, top := range rt.Topics {
			for _, p := range top.Partitions {
				if top.Topic == txn.Topic && p.Partition == txn.Partition {
					if p.ErrorCode == kerr.ProducerFenced.Code {
						// The producer's epoch is older than the
						// transaction's: INVALID_PRODUCER_EPOCH, which a
						// producer handles by aborting, as Kafka's
						// AddPartitionsToTxnManager answers it;
						// PRODUCER_FENCED would be fatal to a live
						// producer whose abort merely overtook its batch.
						return fmt.Errorf("%w: the transaction coordinator fenced epoch %d", kerr.InvalidProducerEpoch, txn.ProducerEpoch)
					}
					return kerr.ErrorForCode(p.ErrorCode)
				}
			}
		}
	}
	return fmt.Errorf("%w: the coordinator did not answer for %s-%d", kerr.CoordinatorNotAvailable, txn.Topic, txn.Partition)
}

func (v *coordinatorVerifier) Close() {
	v.mu.Lock()
	clients := v.clients
	v.clients, v.closed = nil, true
	v.mu.Unlock()
	for _, cl := range clients {
		cl.Close()
	}
}

// firstAbortableProduceVersion is the first Produce version whose clients
// know TRANSACTION_ABORTABLE (Kafka's genericError operation above v10).
const firstAbortableProduceVersion = 11

// firstAddPartitionProduceVersion is the first Produce version of KIP-890
// part 2: the leader adds the partition to the transaction itself.
const firstAddPartitionProduceVersion = 12

// verificationProduceError is the produce error for a failed verification:
// coordinator trouble the producer cannot act on becomes the retriable
// NOT_ENOUGH_REPLICAS, as Kafka's AddPartitionsToTxnManager maps it, and
// TRANSACTION_ABORTABLE is INVALID_TXN_STATE for clients that predate it
// (abortable false).
func verificationError(err error, abortable bool) error {
	if !abortable && errors.Is(err, kerr.TransactionAbortable) {
		return fmt.Errorf("%w: %v", kerr.InvalidTxnState, err)
	}
	return verificationProduceError(err)
}

func verificationProduceError(err error) error {
	for _, retriable := range []*kerr.Error{kerr.CoordinatorNotAvailable, kerr.NotCoordinator, kerr.CoordinatorLoadInProgress, kerr.ConcurrentTransactions} {
		if errors.Is(err, retriable) {
			return fmt.Errorf("%w: the transaction could not be verified: %v", kerr.NotEnoughReplicas, err)
		}
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return fmt.Errorf("%w: the transaction could not be verified: %v", kerr.NotEnoughReplicas, err)
	}
	return err
}

// verificationSetting is transaction.partition.verification.enable as one
// image has it.
type verificationSetting struct {
	img *metadata.Image
	on  bool
}

// verificationEnabled is transaction.partition.verification.enable in
// effect on this broker: its own dynamic config, then the cluster-wide
// dynamic default, then server.properties, as Kafka's
// DynamicProducerStateManagerConfig changes it at run time. It is read
// once per image (the configs copied out of it), not per produce.
func (b *Broker) verificationEnabled(img *metadata.Image) bool {
	if s := b.verification.Load(); s != nil && s.img == img {
		return s.on
	}
	const key = "transaction.partition.verification.enable"
	on := b.cfg.TransactionPartitionVerificationEnable
	for _, layer := range []string{"", strconv.Itoa(int(b.nodeID))} {
		if v, ok := img.BrokerConfig(layer)[key]; ok {
			on = strings.EqualFold(strings.TrimSpace(v), "true")
		}
	}
	b.verification.Store(&verificationSetting{img: img, on: on})
	return on
}

// addRetry is Kafka 4's server-side retry of the KIP-890 part 2 add while
// the previous transaction's markers are still being written
// (KAFKA-18654): add.partitions.to.txn.retry.backoff.ms between attempts,
// for up to add.partitions.to.txn.retry.backoff.max.ms, never past
// request.timeout.ms.
func (b *Broker) addRetry() (backoff, max time.Duration) {
	backoff = time.Duration(b.cfg.AddPartitionsToTxnRetryBackoffMs) * time.Millisecond
	max = time.Duration(b.cfg.AddPartitionsToTxnRetryBackoffMaxMs) * time.Millisecond
	if rt := time.Duration(b.cfg.RequestTimeoutMs) * time.Millisecond; rt > 0 && max > rt {
		max = rt
	}
	return backoff, max
}

// verifyTransaction verifies (or adds) txn's partition with its
// coordinator; an add refused with CONCURRENT_TRANSACTIONS (the
// producer's previous transaction is completing) is tried again for up to
// add.partitions.to.txn.retry.backoff.max.ms, as Kafka 4 does, instead of
// failing the produce at once:
// a client that gets the error retries the batch while its later batches
// are in flight, and one of those could then open the transaction out of
// sequence. No lock is held while waiting.
func (b *Broker) verifyTransaction(ctx context.Context, img *metadata.Image, txn TxnPartition) error {
	backoff, max := b.addRetry()
	deadline := time.Now().Add(max)
	for {
		err := b.txnVerifier.VerifyTransaction(ctx, img, txn)
		if err == nil || !txn.Add || !errors.Is(err, kerr.ConcurrentTransactions) || time.Now().Add(backoff).After(deadline) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
