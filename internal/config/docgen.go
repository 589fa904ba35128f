package config

import (
	"fmt"
	"io"
	"strings"
)

//go:generate go test -run TestConfigurationDocIsCurrent -update-doc .

// WriteMarkdown writes the configuration reference (docs/CONFIGURATION.md)
// from the Def tables, so the document cannot drift from the code; a test
// fails when the checked-in file differs.
func WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# Vltava configuration reference\n\n")
	b.WriteString("<!-- Generated from internal/config by `go generate ./internal/config`; do not edit. -->\n\n")
	b.WriteString("Vltava reads Apache Kafka's configuration: the same key names, types, defaults,\n")
	b.WriteString("validation and DescribeConfigs synonyms. Start the server with\n")
	b.WriteString("`vltava server --config server.properties --override key=value ...`; the file uses\n")
	b.WriteString("Java `.properties` syntax and overrides are applied on top of it. Unknown keys are\n")
	b.WriteString("logged as warnings (security and plugin keys excepted, see Support); invalid values,\n")
	b.WriteString("and values Vltava cannot honour, stop start-up with an error naming the key.\n\n")
	b.WriteString("## Zero-config defaults\n\n")
	b.WriteString("These defaults differ from Kafka's: the identity, roles, listeners and log dirs so\n")
	b.WriteString("that a bare `vltava server` runs a working single-node cluster (they match Kafka's\n")
	b.WriteString("quickstart `server.properties`), and the socket buffers because a fixed size turns\n")
	b.WriteString("off Linux's buffer autotuning, measured in docs/PERFORMANCE.md:\n\n")
	b.WriteString("| Key | Vltava default | Kafka default |\n|---|---|---|\n")
	for _, k := range sortedNames(VltavaDefaults) {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", k, brokerDefs[k].Default, VltavaDefaults[k])
	}
	b.WriteString("\n`controller.quorum.voters` and `controller.quorum.bootstrap.servers` are empty by\n")
	b.WriteString("default, meaning a single-node quorum made of this node; `log.dir` is honoured when\n")
	b.WriteString("`log.dirs` is not set.\n\n")
	b.WriteString("Internal topics keep Kafka's defaults (`offsets.topic.replication.factor=3`, `transaction.state.log.replication.factor=3`), with one\n")
	b.WriteString("zero-config rule: a node that is a single-voter quorum of itself (`process.roles`\n")
	b.WriteString("includes `controller`, and `controller.quorum.voters` and\n")
	b.WriteString("`controller.quorum.bootstrap.servers` are empty) uses these defaults\n")
	b.WriteString("when the key is not set, since one node can never hold three replicas.\n")
	b.WriteString("DescribeConfigs shows the value in effect, with source DEFAULT_CONFIG:\n\n")
	b.WriteString("| Key | Single-node default | Default otherwise |\n|---|---|---|\n")
	for _, k := range sortedNames(singleNodeDefaults) {
		fmt.Fprintf(&b, "| `%s` | `%s` | `%s` |\n", k, singleNodeDefaults[k], brokerDefs[k].Default)
	}
	b.WriteString("\nA cluster of several nodes uses the Kafka default unless the key is set. When\n")
	b.WriteString("`__consumer_offsets` must be created and fewer unfenced brokers are registered than\n")
	b.WriteString("its replication factor, FindCoordinator (and the group APIs) answer\n")
	b.WriteString("COORDINATOR_NOT_AVAILABLE, as Kafka does, until enough brokers have registered; the\n")
	b.WriteString("replication factor is never cut silently.\n\n")

	b.WriteString("## Support\n\n")
	b.WriteString("No key is accepted and then ignored. The Support column of each table says what\n")
	b.WriteString("Vltava does with the key:\n\n")
	b.WriteString("- **honoured**: the value takes effect as in Kafka.\n")
	b.WriteString("- **default only**: only the default is accepted, for the reason given. Any other\n")
	b.WriteString("  value stops start-up with an error naming the key (broker keys, listener-prefixed\n")
	b.WriteString("  forms included), or fails CreateTopics / AlterConfigs with INVALID_CONFIG (topic\n")
	b.WriteString("  keys and dynamic broker configs).\n")
	b.WriteString("- **ignored, as by Kafka**: Kafka itself accepts and ignores the key (deprecated).\n\n")
	b.WriteString("A listener's security protocol (from `listener.security.protocol.map`) decides TLS\n")
	b.WriteString("and SASL: `PLAINTEXT`, `SSL`, `SASL_PLAINTEXT`, `SASL_SSL`; a listener whose TLS or SASL\n")
	b.WriteString("settings are incomplete or invalid stops start-up with the reason.\n")
	b.WriteString("Keys Vltava does not define are logged as warnings and skipped, as Kafka does, except\n")
	b.WriteString("security and plugin settings Kafka would act on (`ssl.*`, `sasl.*`, `*.class`,\n")
	b.WriteString("`*.class.name`, `principal.builder.class`, `authorizer.*`, `metric.reporters`, …),\n")
	b.WriteString("which are refused like the keys marked default only.\n\n")
	b.WriteString("## Broker configs\n\n")
	b.WriteString("Dynamic keys can be changed at run time with AlterConfigs / IncrementalAlterConfigs;\n")
	b.WriteString("read-only keys need a restart. Of the keys Kafka can change at run time, Vltava applies\n")
	b.WriteString("at run time the log defaults (a broker key that provides a topic config's default\n")
	b.WriteString("names that topic config), the replication throttle rates and the connection quotas;\n")
	b.WriteString("the others, marked \"no (Kafka: yes)\", are read at start-up, and a dynamic change to\n")
	b.WriteString("them is refused with INVALID_CONFIG rather than stored and not applied.\n")
	b.WriteString("Listener-prefixed forms (`listener.name.<listener>.<key>`) of the `ssl.*` and `sasl.*`\n")
	b.WriteString("keys and `connections.max.reauth.ms` apply to that listener (and\n")
	b.WriteString("`listener.name.<listener>.<mechanism>.sasl.jaas.config` and `.connections.max.reauth.ms`\n")
	b.WriteString("to one SASL mechanism of it), and so does `listener.name.<listener>.max.connections`\n")
	b.WriteString("(KIP-402, dynamic like `max.connections`): the listener's own limit, on top of the\n")
	b.WriteString("broker-wide one; at either limit the listener stops accepting until a connection\n")
	b.WriteString("closes and frees a slot. Those of\n")
	b.WriteString("other honoured keys are refused: Vltava applies them broker-wide only.\n\n")
	b.WriteString("| Name | Type | Default | Valid values | Dynamic | Support | Description |\n|---|---|---|---|---|---|---|\n")
	for _, d := range BrokerDefs() {
		desc := d.Doc
		if d.TopicSynonym != "" {
			desc += fmt.Sprintf(" Default for topic config `%s`.", d.TopicSynonym)
		}
		if d.VltavaOnly {
			desc = "**Vltava's own key** (Kafka has none). " + desc
		}
		dyn := "yes"
		switch {
		case d.ReadOnly:
			dyn = "no"
		case !BrokerSupport(d.Name).Dynamic:
			// Dynamic in Kafka; AlterConfigs refuses it here.
			dyn = "no (Kafka: yes)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", d.Name, d.Type, mdDefault(d), mdCell(d.Valid), dyn, mdCell(supportCell(BrokerSupport(d.Name))), mdCell(desc))
	}

	b.WriteString("\n## Topic configs\n\n")
	b.WriteString("Set per topic with CreateTopics or AlterConfigs. When a topic does not override a key,\n")
	b.WriteString("its value comes from the broker key in the \"Server default\" column (dynamic cluster\n")
	b.WriteString("default first, then the static broker config, then the default shown).\n\n")
	b.WriteString("| Name | Type | Default | Valid values | Server default | Support | Description |\n|---|---|---|---|---|---|---|\n")
	for _, d := range TopicDefs() {
		server := ""
		if s, ok := topicSynonyms[d.Name]; ok {
			var names []string
			for _, x := range s {
				names = append(names, "`"+x.name+"`")
			}
			server = strings.Join(names, ", ")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", d.Name, d.Type, mdDefault(d), mdCell(d.Valid), server, mdCell(supportCell(TopicSupport(d.Name))), mdCell(d.Doc))
	}
	b.WriteString("\n## Group configs\n\n")
	b.WriteString("Set per consumer group (KIP-848) with IncrementalAlterConfigs / AlterConfigs on resource\n")
	b.WriteString("type GROUP (`vltava configs --entity-type groups --entity-name <group>`), even before the\n")
	b.WriteString("group exists. A key not set for a group takes the broker key in the \"Server default\"\n")
	b.WriteString("column. Values must lie within the broker's `group.consumer.min/max.*` bounds, and the\n")
	b.WriteString("heartbeat interval below the session timeout (INVALID_CONFIG otherwise). The group\n")
	b.WriteString("coordinator applies a change to the group's members from their next heartbeat. Share-group\n")
	b.WriteString("keys (`share.*`, KIP-932) are refused with INVALID_CONFIG.\n\n")
	b.WriteString("| Name | Type | Default | Valid values | Server default | Support | Description |\n|---|---|---|---|---|---|---|\n")
	for _, d := range GroupDefs() {
		server, _ := GroupServerDefault(d.Name)
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | `%s` | %s | %s |\n", d.Name, d.Type, mdDefault(d), mdCell(d.Valid), server, mdCell(supportCell(GroupSupport(d.Name))), mdCell(d.Doc))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// supportCell renders a key's status for the Support column: the status,
// then the reason for anything but honoured.
func supportCell(s Support) string {
	if s.Reason == "" {
		return s.Status.String()
	}
	return s.Status.String() + ": " + s.Reason
}

func mdDefault(d Def) string {
	switch {
	case !d.HasDefault:
		return "null"
	case d.Default == "":
		return `""`
	}
	return "`" + d.Default + "`"
}

func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
