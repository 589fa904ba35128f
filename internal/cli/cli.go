// Package cli implements the vltava client commands: topics, produce,
// consume, groups, configs, cluster, partitions, get-offsets,
// delete-records, dump-log, perf, features and acls. They are the one-binary equivalents of
// Kafka's bin/ tools (kafka-topics.sh, kafka-console-producer.sh,
// kafka-console-consumer.sh, kafka-consumer-groups.sh, kafka-configs.sh,
// kafka-reassign-partitions.sh, kafka-leader-election.sh,
// kafka-get-offsets.sh, kafka-delete-records.sh, kafka-dump-log.sh, kafka-features.sh and the
// perf-test tools), built on franz-go (kgo + kadm) so they work against
// Vltava and any other Kafka-compatible cluster, and they accept those
// tools' flag names (kafka_modes.go, kafka_props.go) beside their own.
//
// Every command reports failures as one line on stderr and a non-zero exit
// (the caller prints the returned error); nothing here calls os.Exit.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultBootstrap is used when neither --bootstrap-server nor
// $VLTAVA_BOOTSTRAP is set, matching Kafka's tools' usual localhost:9092.
const DefaultBootstrap = "localhost:9092"

// BootstrapEnv names the environment variable that supplies the default
// bootstrap servers.
const BootstrapEnv = "VLTAVA_BOOTSTRAP"

// reachTimeout bounds the first request every command makes, so that an
// unreachable cluster is reported within a few seconds rather than after
// franz-go's much longer retry budget.
const reachTimeout = 5 * time.Second

// Commands returns the client commands, each carrying the global flags
// (--bootstrap-server, --command-config, --output) as persistent flags, ready
// to be added to the vltava root command.
func Commands() []*cobra.Command {
	cmds := []*cobra.Command{
		newTopicsCommand(),
		newProduceCommand(),
		newConsumeCommand(),
		newGroupsCommand(),
		newConfigsCommand(),
		newClusterCommand(),
		newPartitionsCommand(),
		newPerfCommand(),
		newGetOffsetsCommand(),
		newDeleteRecordsCommand(),
		newDumpLogCommand(),
		newFeaturesCommand(),
		newACLsCommand(),
		newDelegationTokensCommand(),
		newTransactionsCommand(),
		newVerifyCommand(),
		newConsoleCommand(),
	}
	for _, c := range cmds {
		addGlobalFlags(c)
	}
	cmds = append(cmds, newRegistryCommand())
	// connect talks to the cluster through its worker config, or to a
	// worker's REST API (--connect-url): no global client flags.
	return append(cmds, newConnectCommand(), newMirrorCommand())
}

// globals holds the flags shared by every client command.
type globals struct {
	bootstrap     string
	commandConfig string
	output        string
	// bootstrapGiven: --bootstrap-server or $VLTAVA_BOOTSTRAP set it,
	// so bootstrap.servers from a properties file does not apply.
	bootstrapGiven bool
}

// flagsByCommand maps each top-level client command to its global flags;
// subcommands find theirs by walking up to that command.
var flagsByCommand = map[*cobra.Command]*globals{}

func addGlobalFlags(c *cobra.Command) {
	g := &globals{}
	flagsByCommand[c] = g
	def := os.Getenv(BootstrapEnv)
	if def == "" {
		def = DefaultBootstrap
	}
	pf := c.PersistentFlags()
	pf.StringVar(&g.bootstrap, "bootstrap-server", def, "comma-separated host:port list of brokers to bootstrap from (env "+BootstrapEnv+")")
	pf.StringVar(&g.commandConfig, "command-config", "", "file of Kafka client properties (client.id, request.timeout.ms, ...)")
	pf.StringVar(&g.output, "output", "table", "output format: table or json")
}

// env is what a running command needs: the parsed globals, client
// settings, and where to write.
type env struct {
	g      *globals
	props  clientProps
	stdout io.Writer
	stderr io.Writer
	json   bool
}

// envFor resolves the globals for cmd and validates them.
func envFor(cmd *cobra.Command) (*env, error) {
	c := cmd
	for c != nil && flagsByCommand[c] == nil {
		c = c.Parent()
	}
	if c == nil {
		return nil, errors.New("internal: command has no global flags")
	}
	g := flagsByCommand[c]
	e := &env{g: g, stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}
	g.bootstrapGiven = cmd.Flags().Changed("bootstrap-server") || os.Getenv(BootstrapEnv) != ""
	switch g.output {
	case "table":
	case "json":
		e.json = true
	default:
		return nil, fmt.Errorf("--output %q: want table or json", g.output)
	}
	if strings.TrimSpace(g.bootstrap) == "" {
		return nil, errors.New("--bootstrap-server is empty")
	}
	props := defaultClientProps()
	if g.commandConfig != "" {
		var warnings []string
		var err error
		props, warnings, err = loadClientProps(g.commandConfig)
		if err != nil {
			return nil, err
		}
		for _, w := range warnings {
			fmt.Fprintln(e.stderr, "warning:", w)
		}
	}
	e.props = props
	if _, err := props.securitySettings(); err != nil {
		return nil, err
	}
	return e, nil
}

// bootstrap is the bootstrap list in effect: the flag or environment, else
// bootstrap.servers from a properties file, else the default.
func (e *env) bootstrap() string {
	if !e.g.bootstrapGiven && e.props.bootstrap != "" {
		return e.props.bootstrap
	}
	return e.g.bootstrap
}

// seeds splits the bootstrap list.
func (e *env) seeds() []string {
	var out []string
	for _, s := range strings.Split(e.bootstrap(), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// clientOpts are the kgo options every command starts from: seeds, client
// id and timeouts bounded so that nothing hangs on a dead cluster.
func (e *env) clientOpts() []kgo.Opt {
	opts := e.baseClientOpts()
	// security.protocol, ssl.* and sasl.* from --command-config (or a
	// producer/consumer config): validated by envFor and connect.
	if sec, err := e.props.securitySettings(); err == nil {
		opts = append(opts, sec.KgoOpts()...)
	}
	return opts
}

// baseClientOpts are clientOpts without the security settings.
func (e *env) baseClientOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(e.seeds()...),
		kgo.ClientID(e.props.clientID),
		kgo.DialTimeout(e.props.dialTimeout),
		kgo.RequestTimeoutOverhead(e.props.requestTimeout),
		kgo.RetryTimeout(e.props.requestTimeout),
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
}

// connect builds a client with extra options and checks that the cluster
// answers, so an unreachable bootstrap fails fast with a clear message.
func (e *env) connect(ctx context.Context, extra ...kgo.Opt) (*kgo.Client, *kadm.Client, error) {
	if _, err := e.props.securitySettings(); err != nil {
		return nil, nil, err
	}
	cl, err := kgo.NewClient(append(e.clientOpts(), extra...)...)
	if err != nil {
		return nil, nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		cl.Close()
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, fmt.Errorf("cannot reach the cluster at %s within %v: %v", e.bootstrap(), reachTimeout, err)
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(e.props.requestTimeout / time.Millisecond))
	return cl, adm, nil
}

// invocation is one run of a client command: its resolved globals and the
// cluster client it opened, if any, which is closed when the command ends.
type invocation struct {
	*env
	cmd  *cobra.Command
	args []string
	ctx  context.Context
	cl   *kgo.Client
}

// clusterCommand adapts fn into a cobra RunE holding the prologue every
// client command shares: resolve and validate the globals, and close the
// client fn connected (if it connected at all) when fn returns.
func clusterCommand(fn func(in *invocation) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		e, err := envFor(cmd)
		if err != nil {
			return err
		}
		in := &invocation{env: e, cmd: cmd, args: args, ctx: cmd.Context()}
		defer func() {
			if in.cl != nil {
				in.cl.Close()
			}
		}()
		return fn(in)
	}
}

// cluster connects with extra client options (see env.connect). A command
// connects once; the client lives until the command returns.
func (in *invocation) cluster(ctx context.Context, extra ...kgo.Opt) (*kgo.Client, *kadm.Client, error) {
	if in.cl != nil {
		return nil, nil, errors.New("internal: a command connects once")
	}
	cl, adm, err := in.connect(ctx, extra...)
	if err != nil {
		return nil, nil, err
	}
	in.cl = cl
	return cl, adm, nil
}

// exactArgs is cobra.ExactArgs with a message naming what is missing.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("expected %s, got %d argument(s)", what, len(args))
		}
		return nil
	}
}

// parseKeyValues parses repeated k=v flags, keeping order of first mention.
func parseKeyValues(flag string, kvs []string) ([][2]string, error) {
	out := make([][2]string, 0, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%s %q: expected key=value", flag, kv)
		}
		out = append(out, [2]string{strings.TrimSpace(k), v})
	}
	return out, nil
}

// signalContext is cancelled on SIGINT or SIGTERM so that long-running
// commands stop cleanly on Ctrl-C.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}
