package broker

// docs/COMPATIBILITY.md is rendered from the API registry so it cannot
// drift: this test fails when the file differs from what the registry
// says. Rewrite it with
//
//	go test ./internal/broker -run TestCompatibilityDoc -update

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var update = flag.Bool("update", false, "rewrite docs/COMPATIBILITY.md from the API registry")

// Suites that exercise the APIs. The compat suites drive the built binary
// with real clients; the broker suites send raw requests in process.
const (
	suiteFranz   = "franz-go (`test/compat/franz_*_test.go`, `rawkafka_test.go`)"
	suiteKPython = "kafka-python (`test/compat/python_test.go`)"
	suiteLibrd   = "librdkafka (`test/compat/python_test.go`)"
	suiteKcat    = "kcat (`test/compat/kcat_test.go`)"
	suiteBroker  = "broker (`internal/broker/%s`)"
	suiteGroups  = "groups: franz-go, kafka-python, librdkafka (`test/compat/groups_*_test.go`)"
	suiteGroupU  = "coordinator (`internal/group`)"
	suiteCLI     = "CLI (`test/cli`)"
	suiteCtrl    = "cluster: in-process multi-node (`internal/controller/*_test.go`)"
	suiteQuorum  = "quorum: in-process dynamic quorum (`internal/metadata/quorum/raft_voters_test.go`)"
	suiteCluster = "robustness: three nodes from the binary (`test/cluster/dynamic_quorum_test.go`)"
)

// apiDoc is what the registry does not know about an API: a one-line note
// and the suites that exercise it.
type apiDoc struct {
	notes  string
	suites []string
}

func broker(file string) string { return fmt.Sprintf(suiteBroker, file) }

// apiDocs must name every registered API; TestCompatibilityDoc fails for a
// registration without an entry, so a new API cannot ship undocumented.
var apiDocs = map[kmsg.Key]apiDoc{
	kmsg.ElectLeaders: {"preferred and unclean (KIP-460); null topics = all partitions; forwarded to the active controller",
		[]string{suiteCtrl}},
	kmsg.AlterPartitionAssignments: {"KIP-455: new replicas copy the data and join the ISR before the old ones are dropped; null replicas cancel; forwarded",
		[]string{suiteCtrl}},
	kmsg.ListPartitionReassignments: {"KIP-455: replicas, adding and removing replicas; forwarded",
		[]string{suiteCtrl}},
	kmsg.DescribeQuorum: {"KIP-595/836/853 on the quorum leader (brokers forward); voters and observers with directory ids, voter endpoints (v2); offsets are raft log indexes",
		[]string{suiteCtrl, suiteCluster}},
	kmsg.AddRaftVoter: {"KIP-853: an observer of a dynamic quorum becomes a voter; answered once committed; forwarded to the quorum leader; a static quorum answers UNSUPPORTED_VERSION (as kraft.version 0)",
		[]string{suiteQuorum, suiteCluster}},
	kmsg.RemoveRaftVoter: {"KIP-853: a voter (id + directory id) becomes an observer; forwarded to the quorum leader",
		[]string{suiteQuorum, suiteCluster}},
	kmsg.UpdateRaftVoter: {"KIP-853: a voter's controller endpoint (voters restarted elsewhere also update through the join RPC); forwarded to the quorum leader",
		[]string{suiteQuorum, suiteCluster}},
	kmsg.AlterPartition: {"controller API: ISR changes from partition leaders, Kafka's validation codes",
		[]string{suiteCtrl}},
	kmsg.BrokerRegistration: {"controller API (KIP-631): registration, fenced until caught up",
		[]string{suiteCtrl}},
	kmsg.BrokerHeartbeat: {"controller API (KIP-631): sessions, unfencing, controlled shutdown",
		[]string{suiteCtrl}},
	kmsg.AllocateProducerIDs: {"controller API (KIP-730): blocks of 1000 producer ids",
		[]string{suiteCtrl}},
	kmsg.Produce: {"v3+ write v2 record batches; v0-v2 are answered UNSUPPORTED_VERSION (KIP-896, as Kafka 4); acks 0/1/-1; topic recompression; zstd needs v7+; transactional produce refused",
		[]string{suiteFranz, suiteKPython, suiteLibrd, suiteKcat, broker("produce_test.go")}},
	kmsg.Fetch: {"long-poll, KIP-74 limits, KIP-227 sessions, KIP-320 epochs, KIP-516 topic ids (v13+)",
		[]string{suiteFranz, suiteKPython, suiteLibrd, suiteKcat, broker("fetch_test.go"), broker("fetch_session_test.go")}},
	kmsg.ListOffsets: {"earliest, latest, max timestamp (KIP-734), earliest local (KIP-1005), by timestamp",
		[]string{suiteFranz, suiteKPython, suiteLibrd, suiteKcat, broker("list_offsets_test.go")}},
	kmsg.Metadata: {"auto-creation, topic ids (v10+), authorized operations (everything allowed: no ACLs yet)",
		[]string{suiteFranz, suiteKPython, suiteLibrd, suiteKcat, broker("metadata_test.go")}},
	kmsg.OffsetForLeaderEpoch: {"consumer form (KIP-320); single node: epochs do not move yet",
		[]string{broker("admin_test.go")}},
	kmsg.ApiVersions: {"KIP-511: newer versions answered at v0 with the table; client software name checked (v3+)",
		[]string{suiteFranz, suiteKPython, suiteLibrd, suiteKcat, broker("metadata_test.go")}},
	kmsg.CreateTopics: {"defaults -1/-1 (KIP-464), validate-only, configs returned (v5+), topic id (v7)",
		[]string{suiteFranz, broker("admin_test.go")}},
	kmsg.DeleteTopics: {"by name, or by id (v6, KIP-516)",
		[]string{suiteFranz, broker("admin_test.go")}},
	kmsg.DeleteRecords: {"-1 means the high watermark",
		[]string{suiteFranz, broker("admin_test.go"), broker("fetch_test.go")}},
	kmsg.InitProducerID: {"idempotent producers only; transactional ids refused until the transaction coordinator lands",
		[]string{suiteFranz, suiteLibrd, broker("admin_test.go")}},
	kmsg.DescribeConfigs: {"topics and brokers (\"\" = cluster defaults); sources, synonyms, types, docs; no broker loggers",
		[]string{suiteFranz, broker("admin_test.go")}},
	kmsg.AlterConfigs: {"replaces the resource's whole set of overrides",
		[]string{suiteFranz, broker("admin_test.go")}},
	kmsg.DescribeLogDirs: {"sizes per partition, total and usable bytes (v4)",
		[]string{broker("admin_test.go")}},
	kmsg.CreatePartitions: {"raise a topic's partition count",
		[]string{suiteFranz, broker("admin_test.go")}},
	kmsg.IncrementalAlterConfigs: {"SET, DELETE, APPEND, SUBTRACT (list configs only)",
		[]string{suiteFranz, broker("admin_test.go")}},
	kmsg.DescribeCluster: {"brokers only: endpoint type 2 (controllers) is UNSUPPORTED_ENDPOINT_TYPE",
		[]string{broker("admin_test.go"), suiteCLI}},
	kmsg.FindCoordinator: {"group keys (batched keys v4+); transaction keys answer COORDINATOR_NOT_AVAILABLE until transactions land; creates __consumer_offsets on first use",
		[]string{suiteGroups, suiteLibrd, suiteGroupU}},
	kmsg.JoinGroup: {"classic protocol: KIP-394 member id required, KIP-345 static members, protocol chosen by votes, initial rebalance delay",
		[]string{suiteGroups, suiteGroupU}},
	kmsg.SyncGroup: {"leader's assignment delivered; protocol type/name checked (v5+)",
		[]string{suiteGroups, suiteGroupU}},
	kmsg.Heartbeat: {"session keep-alive; REBALANCE_IN_PROGRESS starts a rejoin",
		[]string{suiteGroups, suiteGroupU}},
	kmsg.LeaveGroup: {"batched members and static members (v3+)",
		[]string{suiteGroups, suiteGroupU}},
	kmsg.OffsetCommit: {"generation and member checks; standalone commits for empty groups; stored in __consumer_offsets",
		[]string{suiteGroups, suiteCLI, suiteGroupU}},
	kmsg.OffsetFetch: {"all partitions when topics is null; multi-group (v8+); require_stable (v7+, no transactions yet)",
		[]string{suiteGroups, suiteCLI, suiteGroupU}},
	kmsg.OffsetDelete: {"GROUP_SUBSCRIBED_TO_TOPIC while the group consumes the topic",
		[]string{suiteGroups, suiteGroupU}},
	kmsg.DescribeGroups: {"members with metadata and assignments; authorized operations",
		[]string{suiteGroups, suiteCLI, suiteGroupU}},
	kmsg.ListGroups: {"states filter (v4+), types filter (v5+)",
		[]string{suiteGroups, suiteCLI, suiteGroupU}},
	kmsg.ConsumerGroupHeartbeat: {"KIP-848 consumer groups: server-side uniform/range assignors, revoke-then-assign reconciliation, static members (epoch -2), regex subscriptions (v1), server-generated member id in v0",
		[]string{suiteGroups, suiteGroupU, broker("consumer_group_test.go")}},
	kmsg.ConsumerGroupDescribe: {"epochs, assignor, members' current and target assignments; classic groups are GROUP_ID_NOT_FOUND",
		[]string{suiteGroupU, broker("consumer_group_test.go")}},
	kmsg.DeleteGroups: {"NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND",
		[]string{suiteGroups, suiteCLI, suiteGroupU}},
}

const compatIntro = `# Vltava compatibility

<!-- Generated by TestCompatibilityDoc in internal/broker from the API
registry; do not edit. Rewrite with:
go test ./internal/broker -run TestCompatibilityDoc -update -->

Vltava serves the Kafka APIs below, at the versions listed, to unmodified
Kafka clients. The table is the broker's own ApiVersions answer: each API's
handler registers its version range, and this page is rendered from that
registry, so it cannot claim what the broker does not serve.

## Clients tested

- **franz-go** (kgo, kadm and raw kmsg requests) and **kcat**, **kafka-python**
  and **librdkafka** (through python3-confluent-kafka), against the built
  binary: ` + "`go test -count=1 ./test/compat`" + ` (one suite:
  ` + "`-run Kcat`, `-run KafkaPython`, `-run Librdkafka`, `-run Franz`" + `).
  The Debian client packages come from ` + "`scripts/install-test-deps.sh`" + `;
  ` + "`VLTAVA_COMPAT_IMPL=kfake`" + ` runs the same suites against franz-go's kfake.
- **Handler tests**: raw requests at exact versions against an in-process
  node: ` + "`go test -race ./internal/broker`" + `.

## Not served yet

Transactions (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
TxnOffsetCommit, WriteTxnMarkers) are not in the table until they land;
clients see them absent from ApiVersions. ACLs, SASL/SSL, delegation
tokens, quotas and the share-group APIs are not served either. The
controller APIs (BrokerRegistration, BrokerHeartbeat, AlterPartition,
AllocateProducerIds) are served to Vltava's own brokers.

## APIs
`

// renderCompatibility renders the doc from the registry.
func renderCompatibility() (string, error) {
	var sb strings.Builder
	sb.WriteString(compatIntro)
	sb.WriteString("\n| key | API | versions | notes | exercised by |\n| ---: | --- | --- | --- | --- |\n")
	keys := make([]int16, 0, len(apis))
	for k := range apis {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var missing []string
	for _, k := range keys {
		a := apis[k]
		name := kmsg.NameForKey(k)
		d, ok := apiDocs[kmsg.Key(k)]
		if !ok {
			missing = append(missing, name)
			continue
		}
		fmt.Fprintf(&sb, "| %d | %s | %d–%d | %s | %s |\n", k, name, a.minVersion, a.maxVersion, d.notes, strings.Join(d.suites, "; "))
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("registered APIs without an entry in apiDocs: %s", strings.Join(missing, ", "))
	}
	for k := range apiDocs {
		if _, ok := apis[int16(k)]; !ok {
			return "", fmt.Errorf("apiDocs describes %s, which is not registered", k.Name())
		}
	}
	return sb.String(), nil
}

func TestCompatibilityDoc(t *testing.T) {
	want, err := renderCompatibility()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "COMPATIBILITY.md")
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate it with -update)", err)
	}
	if string(got) != want {
		t.Errorf("%s is out of date with the API registry; rewrite it with\n\tgo test ./internal/broker -run TestCompatibilityDoc -update", path)
	}
}
