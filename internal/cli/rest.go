package cli

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/restproxy"
	"github.com/vltava/vltava/internal/security/clientauth"
	"github.com/vltava/vltava/internal/security/tlsconf"
)

// RestCommand is vltava rest: the REST Proxy on its own, a Kafka client of
// any Kafka-compatible cluster.
func RestCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rest",
		Short: "Run the REST Proxy (Confluent REST Proxy v2 and v3 API) against any Kafka cluster",
	}
	var configFile string
	var overrides []string
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve the REST Proxy API",
		Long: `Serve the REST Proxy API (Confluent REST Proxy v2 and v3) for the Kafka cluster
at bootstrap.servers. The properties file uses Confluent's kafka-rest.properties
names: bootstrap.servers, listeners, id, authentication.method (NONE or BASIC),
consumer.instance.timeout.ms, consumer.request.timeout.ms,
consumer.request.max.bytes, schema.registry.url, max.request.bytes, and the
Kafka client's security settings prefixed with client. (client.security.protocol,
client.sasl.mechanism, client.sasl.jaas.config, client.ssl.*). Unknown keys are
refused.`,
		Example: `  vltava rest serve --config rest.properties
  vltava rest serve --override bootstrap.servers=127.0.0.1:9092 --override listeners=http://127.0.0.1:8082`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			props, err := loadRestProps(configFile, overrides)
			if err != nil {
				return err
			}
			cfg, err := restConfig(props)
			if err != nil {
				return err
			}
			p, err := restproxy.New(cfg)
			if err != nil {
				return err
			}
			if err := p.Start(); err != nil {
				return err
			}
			slog.Info("REST Proxy started", "listeners", strings.Join(p.Addrs(), ","), "bootstrap.servers", strings.Join(cfg.Bootstrap, ","))
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
			<-sig
			signal.Stop(sig)
			return p.Close()
		},
	}
	serve.Flags().StringVar(&configFile, "config", "", "REST Proxy properties file (kafka-rest.properties names)")
	serve.Flags().StringArrayVar(&overrides, "override", nil, "set a property: --override key=value (repeatable)")
	cmd.AddCommand(serve)
	return cmd
}

// restKeys are the standalone REST Proxy's properties and defaults.
var restKeys = map[string]string{
	"bootstrap.servers":            "",
	"listeners":                    "http://127.0.0.1:8082",
	"id":                           "",
	"authentication.method":        restproxy.AuthNone,
	"consumer.instance.timeout.ms": "300000",
	"consumer.request.timeout.ms":  "1000",
	"consumer.request.max.bytes":   "67108864",
	"schema.registry.url":          "http://127.0.0.1:8081",
	"max.request.bytes":            "67108864",
}

// restClientKeys are the client. security settings honoured.
func restClientKey(k string) bool {
	switch k {
	case "security.protocol", "sasl.mechanism", "sasl.jaas.config":
		return true
	}
	for _, t := range tlsconf.Keys {
		if t == k && k != "ssl.client.auth" && k != "ssl.principal.mapping.rules" {
			return true
		}
	}
	return false
}

// loadRestProps reads the file, then the overrides; a key it does not
// know is refused by name.
func loadRestProps(file string, overrides []string) (map[string]string, error) {
	var kvs [][2]string
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		kvs, err = parseProperties(bufio.NewScanner(f))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("--config %s: %w", file, err)
		}
	}
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		if !ok {
			return nil, fmt.Errorf("--override %q: want key=value", o)
		}
		kvs = append(kvs, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
	}
	props := map[string]string{}
	for k, v := range restKeys {
		props[k] = v
	}
	for _, kv := range kvs {
		k := kv[0]
		if _, ok := restKeys[k]; !ok {
			if c, ok := strings.CutPrefix(k, "client."); !ok || !restClientKey(c) {
				return nil, fmt.Errorf("%s: not a REST Proxy setting this proxy supports", k)
			}
		}
		props[k] = kv[1]
	}
	return props, nil
}

// restConfig builds the proxy's settings from the properties.
func restConfig(props map[string]string) (restproxy.Config, error) {
	var cfg restproxy.Config
	for _, b := range strings.Split(props["bootstrap.servers"], ",") {
		if b = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(b), "PLAINTEXT://"), "SASL_PLAINTEXT://")); b != "" {
			cfg.Bootstrap = append(cfg.Bootstrap, b)
		}
	}
	if len(cfg.Bootstrap) == 0 {
		return cfg, fmt.Errorf("bootstrap.servers: required (the Kafka cluster to front)")
	}
	ls, err := config.ParseHTTPListeners(props["listeners"])
	if err != nil {
		return cfg, fmt.Errorf("listeners: %w", err)
	}
	if len(ls) == 0 {
		return cfg, fmt.Errorf("listeners: at least one endpoint is required")
	}
	cfg.Listeners, cfg.ListenersKey = ls, "listeners"
	cfg.ID = props["id"]
	cfg.SchemaRegistryURL = props["schema.registry.url"]
	cfg.Authentication = strings.ToUpper(props["authentication.method"])
	ms := func(k string) (time.Duration, error) {
		n, err := strconv.ParseInt(props[k], 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%s: want a positive number of milliseconds, not %q", k, props[k])
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	bytes := func(k string) (int64, error) {
		n, err := strconv.ParseInt(props[k], 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%s: want a positive number of bytes, not %q", k, props[k])
		}
		return n, nil
	}
	if cfg.ConsumerInstanceTimeout, err = ms("consumer.instance.timeout.ms"); err != nil {
		return cfg, err
	}
	if cfg.ConsumerRequestTimeout, err = ms("consumer.request.timeout.ms"); err != nil {
		return cfg, err
	}
	if cfg.ConsumerRequestMaxBytes, err = bytes("consumer.request.max.bytes"); err != nil {
		return cfg, err
	}
	if cfg.MaxRequestBytes, err = bytes("max.request.bytes"); err != nil {
		return cfg, err
	}
	lookup := func(k string) (string, bool) { v, ok := props["client."+k]; return v, ok }
	protocol := strings.ToUpper(props["client.security.protocol"])
	switch cfg.Authentication {
	case restproxy.AuthBasic:
		// Each request's credentials are the SASL ones; the proxy has
		// none of its own, only the TLS settings.
		if protocol != "SASL_PLAINTEXT" && protocol != "SASL_SSL" {
			return cfg, fmt.Errorf("authentication.method=BASIC: client.security.protocol must be SASL_PLAINTEXT or SASL_SSL, the caller's credentials going to Kafka over SASL")
		}
		cfg.PassThroughMechanism = props["client.sasl.mechanism"]
		if cfg.PassThroughMechanism == "" {
			cfg.PassThroughMechanism = "PLAIN"
		}
		tlsProto := "PLAINTEXT"
		if protocol == "SASL_SSL" {
			tlsProto = "SSL"
		}
		if cfg.Security, err = clientauth.New(lookup, tlsProto, ""); err != nil {
			return cfg, fmt.Errorf("client.*: %w", err)
		}
		cfg.Security.Protocol = protocol
	case restproxy.AuthNone:
		if cfg.Security, err = clientauth.New(lookup, "", ""); err != nil {
			return cfg, fmt.Errorf("client.*: %w", err)
		}
	default:
		return cfg, fmt.Errorf("authentication.method: NONE or BASIC, not %q", props["authentication.method"])
	}
	return cfg, cfg.Validate()
}
