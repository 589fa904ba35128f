package oauthbearer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"golang.org/x/sync/singleflight"
)

// jwksCache holds the identity provider's signing keys, fetched from
// sasl.oauthbearer.jwks.endpoint.url, as Kafka's RefreshingHttpsJwks: fetched
// at start, refreshed every sasl.oauthbearer.jwks.endpoint.refresh.ms, a
// failed fetch retried with exponential backoff from
// sasl.oauthbearer.jwks.endpoint.retry.backoff.ms until the waits add up to
// sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms, and refreshed early
// when a token names a key id the set does not hold (a rotated key). A
// file: URL is read once at start, as Kafka.
//
// mu guards keys and missing; fetches run outside it, one at a time
// (singleflight), so a slow identity provider never blocks a lookup of a
// known key.
type jwksCache struct {
	url        string
	file       bool
	client     *http.Client
	refresh    time.Duration
	backoff    time.Duration
	backoffMax time.Duration

	mu struct {
		sync.Mutex
		keys map[string][]any // kid → public keys; "" holds keys without a kid
		// missing holds, per unknown kid, its refresh in flight or when
		// it may next trigger one (Kafka's MISSING_KEY_ID_CACHE_IN_FLIGHT_MS).
		missing map[string]*missingKid
	}
	fetches singleflight.Group
	stop    context.CancelFunc
	done    chan struct{}
}

const (
	// missingKidInterval bounds how often one unknown kid refreshes the set,
	// so tokens with invented key ids cannot hammer the identity provider.
	missingKidInterval = time.Minute
	// maxKidLength ignores absurd key ids for early refreshes, as Kafka's
	// MISSING_KEY_ID_MAX_KEY_LENGTH.
	maxKidLength = 60
	fetchTimeout = 10 * time.Second
)

func newJWKSCache(rawURL string, refresh, backoff, backoffMax time.Duration) (*jwksCache, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url=%s: %v", rawURL, err)
	}
	c := &jwksCache{url: rawURL, refresh: refresh, backoff: backoff, backoffMax: backoffMax,
		client: &http.Client{Timeout: fetchTimeout}, done: make(chan struct{})}
	switch u.Scheme {
	case "http", "https":
	case "file":
		c.file, c.url = true, u.Path
	default:
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url=%s: the scheme must be http, https or file", rawURL)
	}
	c.mu.keys = map[string][]any{}
	c.mu.missing = map[string]*missingKid{}
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	if err := c.fetchWithRetry(ctx); err != nil {
		cancel()
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url=%s: %w", rawURL, err)
	}
	if c.file || refresh <= 0 {
		close(c.done)
		return c, nil
	}
	go c.refreshLoop(ctx)
	return c, nil
}

// Close stops the refresh goroutine.
func (c *jwksCache) Close() error {
	c.stop()
	<-c.done
	return nil
}

func (c *jwksCache) refreshLoop(ctx context.Context) {
	defer close(c.done)
	t := time.NewTicker(c.refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := c.fetchWithRetry(ctx); err != nil && ctx.Err() == nil {
				// The keys already held stay in use until a refresh
				// succeeds, as Kafka's.
				slog.Warn("OAUTHBEARER: JWKS refresh failed; keeping the keys held", "url", c.url, "err", err)
			}
		}
	}
}

// fetchWithRetry fetches the set, retrying failures with doubling waits
// until their sum would pass backoffMax.
func (c *jwksCache) fetchWithRetry(ctx context.Context) error {
	wait, waited := c.backoff, time.Duration(0)
	for {
		err := c.fetchOnce(ctx)
		if err == nil || c.file {
			return err
		}
		if waited+wait > c.backoffMax || wait <= 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		waited += wait
		wait *= 2
	}
}

// fetchOnce fetches and installs the set, one fetch at a time.
func (c *jwksCache) fetchOnce(ctx context.Context) error {
	_, err, _ := c.fetches.Do("", func() (any, error) {
		keys, err := c.read(ctx)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.mu.keys = keys
		c.mu.Unlock()
		return nil, nil
	})
	return err
}

func (c *jwksCache) read(ctx context.Context) (map[string][]any, error) {
	var body []byte
	if c.file {
		b, err := os.ReadFile(c.url)
		if err != nil {
			return nil, err
		}
		body = b
	} else {
		ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("JWKS endpoint answered %s", resp.Status)
		}
		body, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return nil, err
		}
	}
	return parseJWKS(body)
}

// parseJWKS decodes a JWK Set (RFC 7517 §5) into public keys by kid,
// skipping keys of unsupported types and keys meant for encryption.
func parseJWKS(body []byte) (map[string][]any, error) {
	var set jwkset.JWKSMarshal
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("the JWKS is not valid JSON: %v", err)
	}
	keys := map[string][]any{}
	for _, m := range set.Keys {
		if m.USE == jwkset.UseEnc {
			continue
		}
		k, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
		if errors.Is(err, jwkset.ErrUnsupportedKey) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("JWKS key %q: %v", m.KID, err)
		}
		keys[m.KID] = append(keys[m.KID], k.Key())
	}
	if len(keys) == 0 {
		return nil, errors.New("the JWKS holds no signing key")
	}
	return keys, nil
}

// lookup returns the keys for kid (all keys when the token names none),
// refreshing the set first when kid is unknown: the first connection to
// meet an unknown kid refreshes, others meeting it meanwhile wait for that
// refresh, and after it the kid triggers no refresh for a minute.
func (c *jwksCache) lookup(ctx context.Context, kid string) []any {
	if ks := c.held(kid); len(ks) > 0 {
		return ks
	}
	if c.file || kid == "" || len(kid) > maxKidLength {
		return nil
	}
	refreshed, owner := c.claimRefresh(kid)
	switch {
	case refreshed == nil:
		return nil // refreshed for this kid within the last minute
	case owner:
		fctx, cancel := context.WithTimeout(ctx, fetchTimeout)
		err := c.fetchOnce(fctx)
		cancel()
		if err != nil {
			slog.Warn("OAUTHBEARER: JWKS refresh for an unknown key id failed", "url", c.url, "kid", kid, "err", err)
		}
		c.finishRefresh(kid)
	default:
		select {
		case <-refreshed:
		case <-ctx.Done():
			return nil
		}
	}
	return c.held(kid)
}

func (c *jwksCache) held(kid string) []any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if kid != "" {
		return c.mu.keys[kid]
	}
	var all []any
	for _, ks := range c.mu.keys {
		all = append(all, ks...)
	}
	return all
}

// missingKid is an unknown kid's refresh: in flight until refreshed is
// closed, then no other before next.
type missingKid struct {
	refreshed chan struct{}
	inFlight  bool
	next      time.Time
}

// claimRefresh returns the channel closed when kid's refresh ends, and
// whether the caller is to run it; nil when kid may not refresh yet.
func (c *jwksCache) claimRefresh(kid string) (<-chan struct{}, bool) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.mu.missing[kid]; ok {
		if e.inFlight {
			return e.refreshed, false
		}
		if now.Before(e.next) {
			return nil, false
		}
	}
	for k, e := range c.mu.missing {
		if !e.inFlight && !now.Before(e.next) {
			delete(c.mu.missing, k)
		}
	}
	e := &missingKid{refreshed: make(chan struct{}), inFlight: true}
	c.mu.missing[kid] = e
	return e.refreshed, true
}

func (c *jwksCache) finishRefresh(kid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.mu.missing[kid]
	e.inFlight, e.next = false, time.Now().Add(missingKidInterval)
	close(e.refreshed)
}
