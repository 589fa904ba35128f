// Package console is Vltava's web console: server-rendered pages over a
// Kafka cluster (overview, topics, a topic's partitions and configs, its
// messages, consumer groups and their lag), served on the project's HTTP
// layer (internal/httpapi) and built on franz-go's kadm, so the same code
// shows the node that embeds it (console.listeners) or any Kafka-compatible
// cluster (vltava console --bootstrap-server ...).
//
// Pages are html/template files and one stylesheet embedded with go:embed:
// nothing is fetched from elsewhere and nothing needs a build step. Every
// page is a GET whose state (search, sort, page, partition, offset) is in
// the query string, so a URL can be shared; the only writes are the
// topic create and delete forms, which console.read.only refuses with 403.
//
// The console is a Kafka client like any other: it holds one kgo client for
// the admin requests, and opens a short-lived consumer per messages page
// (a direct partition read, no group), closed when the page is rendered.
package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/httpapi"
)

// Config is what a console serves and whom it asks.
type Config struct {
	// Bootstrap is the cluster's bootstrap list (host:port).
	Bootstrap []string
	// Client are extra kgo options for every connection the console
	// makes: security (TLS, SASL), client id.
	Client []kgo.Opt
	// HTTP is the console's listeners, TLS and authentication
	// (httpapi.Keys with the console. prefix on a node).
	HTTP httpapi.Options
	// ReadOnly refuses every write (create, delete) with 403.
	ReadOnly bool
	// RequestTimeout bounds the Kafka requests behind one page; 0 means
	// 10 s.
	RequestTimeout time.Duration
	Logger         *slog.Logger
}

// Console is a running web console.
type Console struct {
	cfg   Config
	log   *slog.Logger
	kcl   *kgo.Client
	adm   *kadm.Client
	pages *pages
	mux   *http.ServeMux
	http  *httpapi.Server
}

// New builds a console and its Kafka client; nothing is bound until Start.
func New(cfg Config) (*Console, error) {
	if len(cfg.Bootstrap) == 0 {
		return nil, errors.New("console: no bootstrap servers")
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	pg, err := parsePages()
	if err != nil {
		return nil, err
	}
	kcl, err := kgo.NewClient(cfg.clientOpts()...)
	if err != nil {
		return nil, fmt.Errorf("console: kafka client: %w", err)
	}
	c := &Console{cfg: cfg, log: log, kcl: kcl, adm: kadm.NewClient(kcl), pages: pg, mux: http.NewServeMux()}
	c.routes()
	if cfg.HTTP.Service == "" {
		cfg.HTTP.Service = "console"
	}
	if cfg.HTTP.Logger == nil {
		cfg.HTTP.Logger = log
	}
	c.http = httpapi.New(cfg.HTTP)
	c.http.Handle("/", c.mux)
	return c, nil
}

func (cfg Config) clientOpts() []kgo.Opt {
	return append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Bootstrap...),
		kgo.ClientID("vltava-console"),
		kgo.RetryTimeout(cfg.RequestTimeout),
		kgo.MetadataMinAge(250 * time.Millisecond),
	}, cfg.Client...)
}

// Start binds every listener (or none) and serves.
func (c *Console) Start() error { return c.http.Start() }

// Close stops serving and closes the Kafka client.
func (c *Console) Close() error {
	err := c.http.Close()
	c.kcl.Close()
	return err
}

// Addrs are the bound listener addresses (host:port).
func (c *Console) Addrs() []string {
	var out []string
	for _, a := range c.http.Addrs() {
		out = append(out, a.String())
	}
	return out
}

// Handler is the console's pages without the HTTP layer (listeners,
// authentication): for tests and for mounting elsewhere.
func (c *Console) Handler() http.Handler { return c.mux }

func (c *Console) routes() {
	c.mux.HandleFunc("GET /{$}", c.overview)
	c.mux.HandleFunc("GET /topics", c.topics)
	c.mux.HandleFunc("POST /topics", c.write(c.createTopic))
	c.mux.HandleFunc("GET /topics/{topic}", c.topic)
	c.mux.HandleFunc("POST /topics/{topic}/delete", c.write(c.deleteTopic))
	c.mux.HandleFunc("GET /topics/{topic}/messages", c.messages)
	c.mux.HandleFunc("GET /groups", c.groups)
	c.mux.HandleFunc("GET /groups/{group}", c.group)
	c.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(staticFS)))
	c.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, http.StatusNotFound, "Not found", fmt.Errorf("no page at %s", r.URL.Path), "Use the navigation above.")
	})
}

// write wraps a handler that changes the cluster: refused with 403 when the
// console is read-only, and when the form was posted from another site (a
// page elsewhere must not create or delete topics through a browser that
// can reach the console).
func (c *Console) write(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c.cfg.ReadOnly {
			c.fail(w, r, http.StatusForbidden, "Read-only console", errors.New("this console is read-only (console.read.only=true)"),
				"Changes are refused here; use the CLI (vltava topics ...) or a console without console.read.only.")
			return
		}
		if !sameOrigin(r) {
			c.fail(w, r, http.StatusForbidden, "Refused", errors.New("the form was posted from another site"), "Submit the form from the console's own page.")
			return
		}
		h(w, r)
	}
}

// sameOrigin reports whether a POST comes from the console's own pages:
// browsers send Origin (or Sec-Fetch-Site) with every form POST; a request
// without either is not a browser's cross-site one.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		return r.Header.Get("Sec-Fetch-Site") != "cross-site"
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// ctx is the request's context bounded by the request timeout.
func (c *Console) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), c.cfg.RequestTimeout)
}
