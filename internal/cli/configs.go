package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configResource names what `configs` operates on: a topic, one broker,
// the cluster-wide broker defaults (broker resource with an empty name, as
// kafka-configs.sh --entity-default uses), or a consumer group (KIP-848
// group configs).
type configResource struct {
	topic          string
	broker         int32
	brokerDefaults bool
	group          string
	// quota is a client quota entity (users, clients, ips:
	// configs_quotas.go); the other fields are then unset.
	quota *quotaTarget
	// brokerLogger: broker's loggers (configs_broker_logger.go).
	brokerLogger bool
}

func topicResource(name string) configResource { return configResource{topic: name, broker: -1} }

func (r configResource) String() string {
	switch {
	case r.quota != nil:
		return r.quota.String()
	case r.topic != "":
		return fmt.Sprintf("topic %q", r.topic)
	case r.group != "":
		return fmt.Sprintf("group %q", r.group)
	case r.brokerDefaults:
		return "broker defaults"
	case r.brokerLogger:
		return fmt.Sprintf("broker %d's loggers", r.broker)
	default:
		return fmt.Sprintf("broker %d", r.broker)
	}
}

func (r configResource) describe(ctx context.Context, cl *kgo.Client, adm *kadm.Client) (kadm.ResourceConfig, error) {
	var (
		rcs kadm.ResourceConfigs
		err error
	)
	switch {
	case r.group != "":
		// kadm has no group-config call; the request is Kafka's own.
		rcs, err = describeGroupConfigs(ctx, cl, r.group)
	case r.topic != "":
		rcs, err = adm.DescribeTopicConfigs(ctx, r.topic)
	case r.brokerDefaults:
		rcs, err = adm.DescribeBrokerConfigs(ctx)
	case r.brokerLogger:
		rcs, err = describeBrokerLoggers(ctx, cl, r.broker)
	default:
		rcs, err = adm.DescribeBrokerConfigs(ctx, r.broker)
	}
	if err != nil {
		return kadm.ResourceConfig{}, fmt.Errorf("describing configs of %s: %w", r, err)
	}
	if len(rcs) != 1 {
		return kadm.ResourceConfig{}, fmt.Errorf("describing configs of %s: %d resources in the response", r, len(rcs))
	}
	rc := rcs[0]
	if errors.Is(rc.Err, kerr.UnknownTopicOrPartition) {
		return rc, fmt.Errorf("topic %q does not exist", r.topic)
	}
	if rc.Err != nil {
		return rc, fmt.Errorf("describing configs of %s: %w%s", r, rc.Err, detail(rc.ErrMessage))
	}
	return rc, nil
}

// alterConfigs applies sets and deletes with IncrementalAlterConfigs
// (KIP-339), which changes only the named keys.
func alterConfigs(ctx context.Context, cl *kgo.Client, adm *kadm.Client, r configResource, set [][2]string, del []string) error {
	var alters []kadm.AlterConfig
	for _, kv := range set {
		v := kv[1]
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: kv[0], Value: &v})
	}
	for _, k := range del {
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	var (
		resps kadm.AlterConfigsResponses
		err   error
	)
	switch {
	case r.group != "":
		resps, err = alterGroupConfigs(ctx, cl, alters, r.group)
	case r.topic != "":
		resps, err = adm.AlterTopicConfigs(ctx, alters, r.topic)
	case r.brokerDefaults:
		resps, err = adm.AlterBrokerConfigs(ctx, alters)
	case r.brokerLogger:
		resps, err = alterBrokerLoggers(ctx, cl, alters, r.broker)
	default:
		resps, err = adm.AlterBrokerConfigs(ctx, alters, r.broker)
	}
	if err != nil {
		return fmt.Errorf("altering configs of %s: %w", r, err)
	}
	for _, resp := range resps {
		if errors.Is(resp.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("topic %q does not exist", r.topic)
		}
		if resp.Err != nil {
			return fmt.Errorf("altering configs of %s: %w%s", r, resp.Err, detail(resp.ErrMessage))
		}
	}
	return nil
}

func newConfigsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "configs",
		Short: "Describe and alter topic, broker and group configs (kafka-configs.sh)",
		Example: `  vltava configs describe --topic orders
  vltava configs alter --topic orders --set retention.ms=60000 --delete cleanup.policy
  vltava configs describe --broker 1 --all
  vltava configs alter --group orders-app --set consumer.session.timeout.ms=50000`,
	}
	ents := &entityArgs{}
	cmd.AddCommand(newConfigsDescribeCommand(ents), newConfigsAlterCommand(ents))
	// The entity flags are the parent's own, so their order survives the
	// Kafka form (configs_quotas.go).
	ents.register(cmd.Flags())
	// kafka-configs.sh --entity-type topics --entity-name t --alter --add-config k=v
	addKafkaModes(cmd, "", map[string]string{"describe": "describe", "alter": "alter"})
	return cmd
}

// resourceFlags are the --topic/--broker/--broker-defaults selectors and
// kafka-configs.sh's --entity-type/--entity-name/--entity-default.
type resourceFlags struct {
	topic          string
	broker         int32
	brokerDefaults bool
	group          string
	brokerLogger   int32

	// ents are kafka-configs.sh's --entity-type/--entity-name/
	// --entity-default, in the order given.
	ents *entityArgs
}

func (f *resourceFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.topic, "topic", "", "topic whose configs to use")
	cmd.Flags().Int32Var(&f.broker, "broker", -1, "broker id whose configs to use")
	cmd.Flags().BoolVar(&f.brokerDefaults, "broker-defaults", false, "use the cluster-wide broker defaults")
	cmd.Flags().StringVar(&f.group, "group", "", "consumer group whose configs (KIP-848) to use; it need not exist yet")
	f.ents.register(cmd.Flags())
	cmd.Flags().Int32Var(&f.brokerLogger, "broker-logger", -1, "broker id whose loggers' levels to use (Kafka's --broker-logger)")
}

// fromEntity maps kafka-configs.sh's entity flags onto the selectors.
func (f *resourceFlags) fromEntity() error {
	if len(f.ents.types) == 0 {
		if len(f.ents.names) > 0 {
			return errors.New("--entity-name and --entity-default need --entity-type")
		}
		return nil
	}
	if f.topic != "" || f.broker >= 0 || f.brokerDefaults || f.group != "" || f.brokerLogger >= 0 {
		return errors.New("give --entity-type/--entity-name or --topic/--broker/--broker-defaults/--group, not both")
	}
	if f.ents.isQuotaEntity() {
		return nil // resource() builds the quota target
	}
	if len(f.ents.types) > 1 {
		return errors.New("--entity-type given more than once: only users and clients combine")
	}
	if len(f.ents.names) != 1 {
		return errors.New("give exactly one of --entity-name and --entity-default")
	}
	entityName, entityDefault := "", f.ents.names[0] == nil
	if !entityDefault {
		entityName = *f.ents.names[0]
	}
	switch f.ents.types[0] {
	case "topics":
		if entityDefault {
			return errors.New("--entity-type topics has no default entity")
		}
		f.topic = entityName
	case "groups":
		if entityDefault {
			return errors.New("--entity-type groups has no default entity")
		}
		f.group = entityName
	case "broker-loggers":
		if entityDefault {
			return errors.New("--entity-type broker-loggers has no default entity")
		}
		n, err := strconv.ParseInt(entityName, 10, 32)
		if err != nil || n < 0 {
			return fmt.Errorf("--entity-name %q: want a broker id", entityName)
		}
		f.brokerLogger = int32(n)
	case "brokers":
		if entityDefault {
			f.brokerDefaults = true
			return nil
		}
		n, err := strconv.ParseInt(entityName, 10, 32)
		if err != nil || n < 0 {
			return fmt.Errorf("--entity-name %q: want a broker id", entityName)
		}
		f.broker = int32(n)
	default:
		return fmt.Errorf("--entity-type %q is not supported: use topics, brokers, broker-loggers, groups, users, clients or ips", f.ents.types[0])
	}
	return nil
}

func (f *resourceFlags) resource() (configResource, error) {
	if err := f.fromEntity(); err != nil {
		return configResource{}, err
	}
	if f.ents.isQuotaEntity() {
		t, err := f.ents.quotaTarget()
		return configResource{broker: -1, quota: t}, err
	}
	n := 0
	if f.topic != "" {
		n++
	}
	if f.broker >= 0 {
		n++
	}
	if f.brokerDefaults {
		n++
	}
	if f.group != "" {
		n++
	}
	if f.brokerLogger >= 0 {
		n++
	}
	if n != 1 {
		return configResource{}, errors.New("give exactly one of --topic, --broker, --broker-defaults, --broker-logger or --group")
	}
	if f.brokerLogger >= 0 {
		return configResource{broker: f.brokerLogger, brokerLogger: true}, nil
	}
	return configResource{topic: f.topic, broker: f.broker, brokerDefaults: f.brokerDefaults, group: f.group}, nil
}

// configEntry is one row of `configs describe`.
type configEntry struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Source    string `json:"source"`
	Sensitive bool   `json:"sensitive"`
}

func newConfigsDescribeCommand(ents *entityArgs) *cobra.Command {
	var (
		rf  = resourceFlags{ents: ents}
		all bool
	)
	cmd := &cobra.Command{
		Use:   "describe",
		Short: "Show configs set on a topic, broker or group (all values with --all)",
		Example: `  vltava configs describe --topic orders
  vltava configs describe --broker-defaults
  vltava configs describe --broker 1 --all --output json
  vltava configs describe --entity-type groups --entity-name orders-app --all`,
		Args: cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error {
			res, err := rf.resource()
			if err != nil {
				return err
			}
			cl, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			if res.quota != nil {
				if err := describeQuotas(in.ctx, adm, res.quota, in.json, in.stdout); err != nil || in.json {
					return err
				}
				if user, ok := res.quota.singleUser(); ok {
					// kafka-configs.sh shows a user's SCRAM credentials
					// after its quotas.
					return describeUserScram(in, adm, user)
				}
				return nil
			}
			rc, err := res.describe(in.ctx, cl, adm)
			if err != nil {
				return err
			}
			rows := []configEntry{}
			for _, c := range rc.Configs {
				if !all && !isOverride(res, c.Source) {
					continue
				}
				rows = append(rows, configEntry{Name: c.Key, Value: configValue(c), Source: sourceName(c.Source), Sensitive: c.Sensitive})
			}
			sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
			if in.json {
				return writeJSON(in.stdout, rows)
			}
			t := newTable(in.stdout, "NAME", "VALUE", "SOURCE")
			for _, r := range rows {
				t.row(r.Name, r.Value, r.Source)
			}
			return t.flush()
		}),
	}
	rf.register(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "show every config, including static and default values")
	return cmd
}

// isOverride reports whether a config was set dynamically on the resource
// described, which is what kafka-configs.sh --describe shows by default.
func isOverride(r configResource, s kmsg.ConfigSource) bool {
	switch {
	case r.topic != "":
		return s == kmsg.ConfigSourceDynamicTopicConfig
	case r.group != "":
		return s == kmsg.ConfigSourceGroupConfig
	case r.brokerDefaults:
		return s == kmsg.ConfigSourceDynamicDefaultBrokerConfig
	case r.brokerLogger:
		return true // kafka-configs.sh lists every logger
	default:
		return s == kmsg.ConfigSourceDynamicBrokerConfig
	}
}

// sourceName renders a config source the way kafka-configs.sh does.
func sourceName(s kmsg.ConfigSource) string {
	switch s {
	case kmsg.ConfigSourceDynamicTopicConfig:
		return "DYNAMIC_TOPIC_CONFIG"
	case kmsg.ConfigSourceDynamicBrokerConfig:
		return "DYNAMIC_BROKER_CONFIG"
	case kmsg.ConfigSourceDynamicDefaultBrokerConfig:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case kmsg.ConfigSourceStaticBrokerConfig:
		return "STATIC_BROKER_CONFIG"
	case kmsg.ConfigSourceDefaultConfig:
		return "DEFAULT_CONFIG"
	case kmsg.ConfigSourceDynamicBrokerLoggerConfig:
		return "DYNAMIC_BROKER_LOGGER_CONFIG"
	case kmsg.ConfigSourceGroupConfig:
		return "GROUP_CONFIG"
	default:
		return "UNKNOWN(" + strconv.Itoa(int(s)) + ")"
	}
}

func newConfigsAlterCommand(ents *entityArgs) *cobra.Command {
	var (
		rf         = resourceFlags{ents: ents}
		sets, dels []string
		addConfigs []string
		delConfigs []string
		addFile    string
	)
	cmd := &cobra.Command{
		Use:   "alter",
		Short: "Set or delete configs with IncrementalAlterConfigs",
		Example: `  vltava configs alter --topic orders --set retention.ms=60000 --set segment.bytes=1048576
  vltava configs alter --topic orders --delete retention.ms
  vltava configs alter --broker-defaults --set log.retention.ms=604800000
  vltava configs --alter --entity-type topics --entity-name orders --add-config retention.ms=60000,cleanup.policy=[compact,delete]`,
		Args: cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error {
			res, err := rf.resource()
			if err != nil {
				return err
			}
			kvs, err := parseKeyValues("--set", sets)
			if err != nil {
				return err
			}
			added, err := kafkaAddConfigs(addConfigs, addFile)
			if err != nil {
				return err
			}
			kvs = append(kvs, added...)
			for _, d := range delConfigs {
				for _, k := range strings.Split(d, ",") {
					if k = strings.TrimSpace(k); k != "" {
						dels = append(dels, k)
					}
				}
			}
			if len(kvs) == 0 && len(dels) == 0 {
				return errors.New("nothing to alter: give --set k=v and/or --delete k")
			}
			cl, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			if res.quota != nil {
				err = alterQuotas(in.ctx, adm, res.quota, kvs, dels)
			} else {
				err = alterConfigs(in.ctx, cl, adm, res, kvs, dels)
			}
			if err != nil {
				return err
			}
			if in.json {
				return writeJSON(in.stdout, map[string]any{"altered": res.String()})
			}
			fmt.Fprintf(in.stdout, "Completed updating config for %s.\n", res)
			return nil
		}),
	}
	rf.register(cmd)
	cmd.Flags().StringArrayVar(&sets, "set", nil, "config key=value to set (repeatable)")
	cmd.Flags().StringArrayVar(&dels, "delete", nil, "config key to delete, reverting it to its default (repeatable)")
	cmd.Flags().StringArrayVar(&addConfigs, "add-config", nil, "Kafka's form of --set: k1=v1,k2=[a,b] (repeatable)")
	cmd.Flags().StringVar(&addFile, "add-config-file", "", "properties file of configs to set (Kafka's --add-config-file)")
	cmd.Flags().StringArrayVar(&delConfigs, "delete-config", nil, "Kafka's form of --delete: k1,k2 (repeatable)")
	return cmd
}

// clusterDescription is the result of `cluster describe`.
type clusterDescription struct {
	ClusterID  string         `json:"cluster_id"`
	Controller int32          `json:"controller"`
	Brokers    []brokerDetail `json:"brokers"`
	// Quorum is the metadata quorum (DescribeQuorum), when the cluster
	// answers it.
	Quorum *quorumDescription `json:"quorum,omitempty"`
}

type brokerDetail struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
	Rack string `json:"rack,omitempty"`
}

func newClusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "cluster",
		Short:   "Inspect the cluster",
		Example: `  vltava cluster describe`,
	}
	cmd.AddCommand(&cobra.Command{
		Use:     "describe",
		Short:   "Show the cluster id, controller and brokers",
		Example: `  vltava cluster describe --output json`,
		Args:    cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error {
			cl, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			m, err := adm.BrokerMetadata(in.ctx)
			if err != nil {
				return fmt.Errorf("describing the cluster: %w", err)
			}
			d := clusterDescription{ClusterID: m.Cluster, Controller: m.Controller, Brokers: []brokerDetail{}}
			for _, b := range m.Brokers {
				bd := brokerDetail{ID: b.NodeID, Host: b.Host, Port: b.Port}
				if b.Rack != nil {
					bd.Rack = *b.Rack
				}
				d.Brokers = append(d.Brokers, bd)
			}
			if d.Quorum, err = describeQuorum(in.ctx, cl); err != nil {
				return err
			}
			if in.json {
				return writeJSON(in.stdout, d)
			}
			fmt.Fprintf(in.stdout, "Cluster ID: %s\nController: %d\n", d.ClusterID, d.Controller)
			t := newTable(in.stdout, "BROKER", "HOST", "PORT", "RACK")
			for _, b := range d.Brokers {
				t.row(b.ID, b.Host, b.Port, b.Rack)
			}
			if err := t.flush(); err != nil {
				return err
			}
			return printQuorum(in.stdout, d.Quorum)
		}),
	})
	addQuorumCommands(cmd)
	return cmd
}
