// Package replication is the follower side of Kafka's replication (its
// ReplicaFetcherManager and ReplicaFetcherThread): for every partition this
// broker follows, it fetches from the partition's leader over the Kafka
// protocol with this broker's replica id, appends what it gets as it is,
// truncates where its log diverged from the leader's (KIP-320 diverging
// epochs) and follows the leader's high watermark. One fetcher goroutine per
// source broker (num.replica.fetchers of them) multiplexes all the
// partitions led there. The Manager also runs the leaders' periodic ISR
// shrink check.
package replication

import (
	"hash/fnv"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/security/clientauth"
	"github.com/vltava/vltava/internal/storage"
)

// Options are what a Manager is built from.
type Options struct {
	NodeID     int32
	Config     *config.Broker
	Partitions *partition.Manager
	// Quotas are the replication throttles; their limits follow the
	// dynamic broker configs of each image. Zero: unlimited.
	Quotas Quotas
	// Security is how fetchers connect to the leaders' inter-broker
	// listeners (its protocol, TLS and SASL); nil: PLAINTEXT.
	Security *clientauth.Security
	Logger   *slog.Logger
}

// Manager keeps one fetcher per (leader, fetcher id) for the partitions this
// broker follows, in step with the metadata image.
//
// Thread-safety: Apply and Close may be called from any goroutine; mu
// guards the fetcher set.
type Manager struct {
	nodeID     int32
	cfg        *config.Broker
	partitions *partition.Manager
	quotas     Quotas
	security   *clientauth.Security
	log        *slog.Logger

	mu struct {
		sync.Mutex
		fetchers map[fetcherKey]*fetcher
		closed   bool
	}

	stop chan struct{}
	wg   sync.WaitGroup
}

// fetcherKey names a fetcher: its source broker and, with
// num.replica.fetchers > 1, which of that broker's fetchers.
type fetcherKey struct {
	leader int32
	id     int
}

// NewManager returns a Manager with no fetchers and starts the ISR shrink
// check, which Kafka runs every replica.lag.time.max.ms / 2.
func NewManager(o Options) *Manager {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	quotas := o.Quotas
	if quotas.Leader == nil || quotas.Follower == nil {
		quotas = NewQuotas()
	}
	m := &Manager{nodeID: o.NodeID, cfg: o.Config, partitions: o.Partitions, quotas: quotas, security: o.Security, log: log.With("component", "replication"), stop: make(chan struct{})}
	m.mu.fetchers = make(map[fetcherKey]*fetcher)
	interval := max(o.Partitions.ReplicaLagTimeMax()/2, 10*time.Millisecond)
	m.wg.Add(1)
	go m.shrinkISRLoop(interval)
	return m
}

func (m *Manager) shrinkISRLoop(interval time.Duration) {
	defer m.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.partitions.MaybeShrinkISRs()
		}
	}
}

// followTarget is one partition to fetch and from where.
type followTarget struct {
	tp          storage.TopicPartition
	topicID     [16]byte
	leaderEpoch int32
}

// Apply starts, updates and stops fetchers so that exactly the partitions
// this broker follows in img (a replica, not the leader, and a leader
// exists) are fetched from their leaders. Call it after partition.Manager
// has applied img, so the partitions exist and know their role.
func (m *Manager) Apply(img *metadata.Image) {
	// leader/follower.replication.throttled.rate apply at run time.
	leaderRate, followerRate := m.cfg.ReplicationThrottledRates(img.BrokerConfig(strconv.Itoa(int(m.nodeID))), img.BrokerConfig(""))
	m.quotas.Leader.SetLimit(leaderRate)
	m.quotas.Follower.SetLimit(followerRate)
	want := make(map[fetcherKey]map[storage.TopicPartition]followTarget)
	addrs := make(map[int32]string)
	for _, t := range img.Topics() {
		for _, pi := range t.Partitions {
			if pi.Leader < 0 || pi.Leader == m.nodeID || !slices.Contains(pi.Replicas, m.nodeID) {
				continue
			}
			if m.partitions.Get(t.Name, pi.Partition) == nil {
				continue
			}
			addr, ok := addrs[pi.Leader]
			if !ok {
				addr = m.leaderAddr(img, pi.Leader)
				addrs[pi.Leader] = addr
			}
			if addr == "" {
				continue
			}
			k := fetcherKey{leader: pi.Leader, id: m.fetcherID(t.Name, pi.Partition)}
			if want[k] == nil {
				want[k] = make(map[storage.TopicPartition]followTarget)
			}
			tp := storage.TopicPartition{Topic: t.Name, Partition: pi.Partition}
			want[k][tp] = followTarget{tp: tp, topicID: [16]byte(t.ID), leaderEpoch: pi.LeaderEpoch}
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return
	}
	for k, f := range m.mu.fetchers {
		targets, ok := want[k]
		if !ok || f.addr != addrs[k.leader] {
			f.shutdown()
			delete(m.mu.fetchers, k)
			continue
		}
		f.setTargets(targets)
	}
	for k, targets := range want {
		if _, ok := m.mu.fetchers[k]; ok {
			continue
		}
		f := newFetcher(m, k, addrs[k.leader])
		f.setTargets(targets)
		m.mu.fetchers[k] = f
		f.start()
	}
}

// leaderAddr is the host:port of a broker's inter-broker listener in img
// (inter.broker.listener.name, else its first endpoint), or "".
func (m *Manager) leaderAddr(img *metadata.Image, id int32) string {
	br, ok := img.Broker(id)
	if !ok || len(br.Endpoints) == 0 {
		m.log.Warn("leader has no registered endpoint; not fetching from it", "leader", id)
		return ""
	}
	ep := br.Endpoints[0]
	for _, e := range br.Endpoints {
		if e.Name == m.cfg.InterBrokerListenerName {
			ep = e
			break
		}
	}
	return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
}

// fetcherID spreads a leader's partitions over num.replica.fetchers
// fetchers by a hash of the partition, as Kafka's getFetcherId does.
func (m *Manager) fetcherID(topic string, partition int32) int {
	n := int(max(m.cfg.NumReplicaFetchers, 1))
	if n == 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(topic))
	return int((h.Sum32()*31 + uint32(partition)) % uint32(n))
}

// Close stops every fetcher and the ISR check and waits for them.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return
	}
	m.mu.closed = true
	fs := m.mu.fetchers
	m.mu.fetchers = nil
	m.mu.Unlock()
	close(m.stop)
	for _, f := range fs {
		f.shutdown()
	}
	m.wg.Wait()
}

// FetcherCount is the number of running fetchers (for tests and metrics).
func (m *Manager) FetcherCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.mu.fetchers)
}
