package node

import (
	"fmt"

	"github.com/vltava/vltava/internal/console"
	"github.com/vltava/vltava/internal/httpapi"
)

// consoleHTTPKeys are the web console's keys: console.listeners,
// console.ssl.*, console.authentication.*.
var consoleHTTPKeys = httpapi.Keys{Service: "console", Prefix: "console.", DefaultRealm: "vltava-console"}

// startConsole starts the web console (console.listeners) once the broker
// serves: it is a Kafka client of this node's own listener, with the
// inter-broker listener's security, as the embedded schema registry is.
func (n *Node) startConsole() error {
	if len(n.cfg.ConsoleListeners) == 0 || n.brokerAPIs == nil {
		return nil
	}
	seed := n.ownListener()
	sec, err := interBrokerSecurity(n.cfg)
	if err != nil {
		return fmt.Errorf("console.listeners: %w", err)
	}
	opts, err := consoleHTTPKeys.Options(n.cfg.HTTPServiceSetting)
	if err != nil {
		return err
	}
	opts.Listeners = n.cfg.ConsoleListeners
	opts.Logger = n.log.With("component", "console")
	c, err := console.New(console.Config{
		Bootstrap: []string{seed},
		Client:    sec.KgoOpts(),
		HTTP:      opts,
		ReadOnly:  n.cfg.ConsoleReadOnly,
		Logger:    n.log.With("component", "console"),
	})
	if err != nil {
		return fmt.Errorf("console.listeners: %w", err)
	}
	if err := c.Start(); err != nil {
		c.Close()
		if _, set := n.cfg.Raw["console.listeners"]; set {
			return fmt.Errorf("console.listeners: %w", err)
		}
		// The default endpoint (127.0.0.1:8080) is taken, by another node
		// or program on this machine: as with admin.listeners, the node
		// runs without a console and says so; an endpoint set explicitly
		// stops it.
		n.log.Warn("web console not started: its default endpoint is in use; set console.listeners to serve it elsewhere (or empty to turn it off)", "err", err)
		return nil
	}
	n.console = c
	return nil
}

// closeConsole stops the web console, before the listeners its client
// uses.
func (n *Node) closeConsole() error {
	if n.console == nil {
		return nil
	}
	return n.console.Close()
}

// ConsoleAddrs are the web console's bound addresses (none without one).
func (n *Node) ConsoleAddrs() []string {
	if n.console == nil {
		return nil
	}
	return n.console.Addrs()
}
