package restproxy

import (
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/clientauth"
)

// identity is who a Kafka connection authenticates as: the proxy's own
// (the zero identity) or a request's basic-auth user, keyed with a digest
// of the password so that a wrong password never reuses a good client.
type identity struct {
	user   string
	digest [sha256.Size]byte
}

// kafkaClient is one identity's connection to the cluster.
type kafkaClient struct {
	kgo      *kgo.Client
	adm      *kadm.Client
	lastUsed atomic.Int64 // unix nanos
}

// clientPool holds a Kafka client per identity, closing those idle for
// ClientIdleTimeout. Creating a kgo client does no I/O (it connects on the
// first request), so the pool's lock is never held across the network.
type clientPool struct {
	cfg  *Config
	log  *slog.Logger
	mu   sync.Mutex // guards clients
	m    map[identity]*kafkaClient
	stop chan struct{}
	done sync.WaitGroup
}

func newClientPool(cfg *Config, log *slog.Logger) *clientPool {
	return &clientPool{cfg: cfg, log: log, m: map[identity]*kafkaClient{}, stop: make(chan struct{})}
}

// security is the identity's connection settings: the proxy's own, or its
// TLS with the request's credentials over the pass-through mechanism.
func (cp *clientPool) security(r *http.Request) (identity, *clientauth.Security, error) {
	if cp.cfg.Authentication != AuthBasic {
		return identity{}, cp.cfg.Security, nil
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		return identity{}, nil, errf(codeUnauthenticated, "Authentication failed: no basic-auth credentials")
	}
	sec := *cp.cfg.Security
	sec.Mechanism, sec.Username, sec.Password = cp.cfg.PassThroughMechanism, user, pass
	return identity{user: user, digest: sha256.Sum256([]byte(pass))}, &sec, nil
}

// baseOpts are the options every client of the proxy has.
func (cp *clientPool) baseOpts(sec *clientauth.Security) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(cp.cfg.Bootstrap...),
		kgo.ClientID("vltava-rest-proxy"),
		kgo.RecordPartitioner(newPartitioner()),
		kgo.ProducerLinger(0),
		kgo.MaxBufferedRecords(100000),
	}
	return append(opts, sec.KgoOpts()...)
}

// get is the request's identity's client.
func (cp *clientPool) get(r *http.Request) (*kafkaClient, error) {
	id, sec, err := cp.security(r)
	if err != nil {
		return nil, err
	}
	now := time.Now().UnixNano()
	cp.mu.Lock()
	c := cp.m[id]
	cp.mu.Unlock()
	if c != nil {
		c.lastUsed.Store(now)
		return c, nil
	}
	kc, err := kgo.NewClient(cp.baseOpts(sec)...)
	if err != nil {
		return nil, errf(codeInternalServerError, "Kafka client: %v", err)
	}
	c = &kafkaClient{kgo: kc, adm: kadm.NewClient(kc)}
	c.lastUsed.Store(now)
	cp.mu.Lock()
	if old := cp.m[id]; old != nil {
		cp.mu.Unlock()
		kc.Close()
		return old, nil
	}
	cp.m[id] = c
	cp.mu.Unlock()
	return c, nil
}

// start runs the idle sweeper.
func (cp *clientPool) start() {
	cp.done.Add(1)
	go func() {
		defer cp.done.Done()
		t := time.NewTicker(cp.cfg.ClientIdleTimeout / 4)
		defer t.Stop()
		for {
			select {
			case <-cp.stop:
				return
			case <-t.C:
				cp.closeIdle(time.Now().Add(-cp.cfg.ClientIdleTimeout).UnixNano())
			}
		}
	}()
}

func (cp *clientPool) closeIdle(before int64) {
	var idle []*kafkaClient
	cp.mu.Lock()
	for id, c := range cp.m {
		if c.lastUsed.Load() < before {
			idle = append(idle, c)
			delete(cp.m, id)
		}
	}
	cp.mu.Unlock()
	for _, c := range idle {
		c.kgo.Close()
	}
}

func (cp *clientPool) close() {
	select {
	case <-cp.stop:
	default:
		close(cp.stop)
	}
	cp.done.Wait()
	cp.closeIdle(1<<63 - 1)
}

// basicAuthenticator maps HTTP basic credentials to the principal
// User:<name>. It does not check the password: the Kafka connection made
// with it does, and a refusal answers 401 with 40101.
type basicAuthenticator struct{}

func (basicAuthenticator) Authenticate(r *http.Request) (security.Principal, error) {
	user, _, ok := r.BasicAuth()
	if !ok || user == "" {
		return security.Principal{}, errors.New("no basic-auth credentials")
	}
	return security.User(user), nil
}
