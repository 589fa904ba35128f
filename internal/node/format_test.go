package node

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metadata/quorum"
)

// testConfig is a node's config: node.id id with its data under dir, and
// extra keys (key=value) on top.
func testConfig(t *testing.T, id int, dir string, extra ...string) *config.Broker {
	t.Helper()
	overrides := append([]string{
		fmt.Sprintf("node.id=%d", id),
		"log.dirs=" + dir,
		"admin.listeners=", // tests run side by side: no admin port
	}, extra...)
	cfg, _, err := config.LoadBroker("", overrides)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// controllerKeys are a combined node of a dynamic quorum whose controller
// listener is self and whose bootstrap servers are bootstrap.
func controllerKeys(self, bootstrap string) []string {
	return []string{
		"process.roles=broker,controller",
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://" + self,
		"advertised.listeners=PLAINTEXT://127.0.0.1:9092",
		"controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"controller.quorum.bootstrap.servers=" + bootstrap,
	}
}

func TestFormatStandaloneWritesInitialVoter(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, 1, dir, controllerKeys("127.0.0.1:19093", "127.0.0.1:19093")...)
	cid := metadata.NewUuid().String()
	res, err := Format(cfg, FormatOptions{ClusterID: cid, Standalone: true})
	if err != nil {
		t.Fatal(err)
	}
	mp, err := metadata.ReadMetaProperties(filepath.Join(dir, metadata.MetaPropertiesFile))
	if err != nil || mp.ClusterID != cid || mp.NodeID != 1 || mp.DirectoryID == metadata.ZeroUuid {
		t.Fatalf("meta.properties %+v, %v", mp, err)
	}
	voters, err := quorum.ReadBootstrapVoters(raftDir(cfg))
	if err != nil || len(voters) != 1 || voters[0].Key.DirectoryID != mp.DirectoryID || voters[0].Addr != "127.0.0.1:19093" {
		t.Fatalf("bootstrap voters %+v, %v (result %+v)", voters, err, res)
	}
	// The first start accepts it.
	gotMP, gotVoters, err := dynamicStorage(cfg)
	if err != nil || gotMP.DirectoryID != mp.DirectoryID || len(gotVoters) != 1 {
		t.Fatalf("dynamicStorage: %+v %+v %v", gotMP, gotVoters, err)
	}
	// Formatting again is refused, unless --ignore-formatted (then
	// nothing is left to format).
	if _, err := Format(cfg, FormatOptions{ClusterID: cid, Standalone: true}); err == nil || !strings.Contains(err.Error(), "--ignore-formatted") {
		t.Fatalf("second format: %v", err)
	}
	if _, err := Format(cfg, FormatOptions{ClusterID: cid, Standalone: true, IgnoreFormatted: true}); err == nil || !strings.Contains(err.Error(), "already formatted") {
		t.Fatalf("second format with --ignore-formatted: %v", err)
	}
}

func TestFormatInitialControllersUsesListedDirectoryID(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, 2, dir, controllerKeys("127.0.0.1:19094", "127.0.0.1:19093,127.0.0.1:19094")...)
	d1, d2 := metadata.NewUuid(), metadata.NewUuid()
	list := fmt.Sprintf("1@127.0.0.1:19093:%s,2@127.0.0.1:19094:%s", d1, d2)
	ics, err := quorum.ParseInitialControllers(list)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Format(cfg, FormatOptions{ClusterID: metadata.NewUuid().String(), InitialControllers: ics}); err != nil {
		t.Fatal(err)
	}
	mp, _, err := dynamicStorage(cfg)
	if err != nil || mp.DirectoryID != d2 {
		t.Fatalf("directory id %v, want %v (%v)", mp.DirectoryID, d2, err)
	}
}

// TestSplitConfigurationsRefused lists the configurations that would split
// a cluster or disagree with it; each is refused with what to run instead.
func TestSplitConfigurationsRefused(t *testing.T) {
	cid := metadata.NewUuid().String()
	tests := []struct {
		name   string
		keys   []string
		format *FormatOptions // nil: start without formatting
		want   string
	}{{
		name: "unformatted controller of a dynamic quorum",
		keys: controllerKeys("127.0.0.1:19094", "127.0.0.1:19093"),
		want: "--no-initial-controllers",
	}, {
		name: "unformatted broker of a dynamic quorum",
		keys: []string{"process.roles=broker", "listeners=PLAINTEXT://127.0.0.1:0", "controller.listener.names=CONTROLLER",
			"controller.quorum.bootstrap.servers=127.0.0.1:19093"},
		want: "vltava storage format --config <server.properties> --cluster-id",
	}, {
		name:   "standalone whose bootstrap servers list only other nodes",
		keys:   controllerKeys("127.0.0.1:19094", "127.0.0.1:19093"),
		format: &FormatOptions{ClusterID: cid, Standalone: true},
		want:   "would form a cluster of its own",
	}, {
		name:   "dynamic controller formatted without saying how it joins",
		keys:   controllerKeys("127.0.0.1:19094", "127.0.0.1:19093"),
		format: &FormatOptions{ClusterID: cid},
		want:   "--standalone",
	}, {
		name:   "initial controllers without this node",
		keys:   controllerKeys("127.0.0.1:19094", "127.0.0.1:19093"),
		format: &FormatOptions{ClusterID: cid, InitialControllers: []quorum.Member{{Key: quorum.ReplicaKey{ID: 1, DirectoryID: metadata.NewUuid()}, Addr: "127.0.0.1:19093", Voter: true}}},
		want:   "--no-initial-controllers",
	}, {
		name: "static voters and bootstrap servers naming other nodes",
		keys: append(controllerKeys("127.0.0.1:19094", "127.0.0.1:19095"), "controller.quorum.voters=2@127.0.0.1:19094"),
		want: "set only controller.quorum.voters",
	}, {
		name:   "standalone with static voters",
		keys:   []string{"process.roles=broker,controller", "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:19094", "controller.listener.names=CONTROLLER", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT", "controller.quorum.voters=2@127.0.0.1:19094"},
		format: &FormatOptions{ClusterID: cid, Standalone: true},
		want:   "controller.quorum.voters is set",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(t, 2, dir, tc.keys...)
			var err error
			if tc.format != nil {
				_, err = Format(cfg, *tc.format)
			} else {
				_, err = Start(cfg, nil)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if tc.format == nil {
				// Refused before anything was written: no quorum state.
				if _, err := os.Stat(filepath.Join(raftDir(cfg), quorum.RaftStoreFile)); err == nil {
					t.Fatal("a refused start created raft state")
				}
			}
		})
	}
}

// TestStandaloneRefusedBesideRunningQuorum: a second --standalone
// controller whose bootstrap servers reach a quorum that already has a
// leader would lead a second cluster; format (and so its first start)
// refuses it.
func TestStandaloneRefusedBesideRunningQuorum(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	first := ln.Addr().String()
	key := quorum.ReplicaKey{ID: 1, DirectoryID: metadata.NewUuid()}
	l, err := quorum.OpenRaftLog(quorum.RaftConfig{
		NodeID: 1, DirectoryID: key.DirectoryID, Dir: t.TempDir(), Voter: true, Listener: ln,
		AdvertiseAddr: first, BootstrapServers: []string{first},
		InitialVoters:    []quorum.Member{{Key: key, Addr: first, Voter: true}},
		HeartbeatTimeout: 100 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond,
		LeaderLeaseTimeout: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !l.IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("the first controller did not elect itself")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cfg := testConfig(t, 2, t.TempDir(), controllerKeys("127.0.0.1:19094", first+",127.0.0.1:19094")...)
	_, err = Format(cfg, FormatOptions{ClusterID: metadata.NewUuid().String(), Standalone: true})
	if err == nil || !strings.Contains(err.Error(), "second cluster") || !strings.Contains(err.Error(), "--no-initial-controllers") {
		t.Fatalf("format --standalone beside a running quorum: %v", err)
	}
	// --no-initial-controllers is the way in.
	if _, err := Format(cfg, FormatOptions{ClusterID: metadata.NewUuid().String(), NoInitialControllers: true}); err != nil {
		t.Fatal(err)
	}
}

// A node of a dynamic quorum whose log dirs were formatted for different
// clusters is refused at start, as one of a static quorum is.
func TestDynamicStorageRefusesMixedClusterIDs(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	keys := append([]string{"process.roles=broker", "listeners=PLAINTEXT://127.0.0.1:0", "controller.listener.names=CONTROLLER",
		"controller.quorum.bootstrap.servers=127.0.0.1:19093", "metadata.log.dir=" + a}, "log.dirs="+a+","+b)
	cfg := testConfig(t, 1, a, keys...)
	if _, err := Format(cfg, FormatOptions{ClusterID: metadata.NewUuid().String()}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := dynamicStorage(cfg); err != nil {
		t.Fatalf("formatted node refused: %v", err)
	}
	other := metadata.MetaProperties{ClusterID: metadata.NewUuid().String(), NodeID: 1, DirectoryID: metadata.NewUuid()}
	if err := metadata.WriteMetaProperties(filepath.Join(b, metadata.MetaPropertiesFile), other); err != nil {
		t.Fatal(err)
	}
	if _, _, err := dynamicStorage(cfg); err == nil || !strings.Contains(err.Error(), other.ClusterID) {
		t.Fatalf("dirs of two clusters: %v", err)
	}
}

// --ignore-formatted skips only dirs of this node of the cluster being
// formatted: a dir of another cluster is refused, not left to fail the start.
func TestFormatIgnoreFormattedRefusesOtherCluster(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	cfg := testConfig(t, 1, a, "log.dirs="+a+","+b, "metadata.log.dir="+a)
	other := metadata.MetaProperties{ClusterID: metadata.NewUuid().String(), NodeID: 1, DirectoryID: metadata.NewUuid()}
	if err := metadata.WriteMetaProperties(filepath.Join(b, metadata.MetaPropertiesFile), other); err != nil {
		t.Fatal(err)
	}
	cid := metadata.NewUuid().String()
	if _, err := Format(cfg, FormatOptions{ClusterID: cid, IgnoreFormatted: true}); err == nil || !strings.Contains(err.Error(), other.ClusterID) {
		t.Fatalf("format beside a dir of another cluster: %v", err)
	}
	if err := metadata.WriteMetaProperties(filepath.Join(b, metadata.MetaPropertiesFile), metadata.MetaProperties{ClusterID: cid, NodeID: 1, DirectoryID: other.DirectoryID}); err != nil {
		t.Fatal(err)
	}
	res, err := Format(cfg, FormatOptions{ClusterID: cid, IgnoreFormatted: true})
	if err != nil || len(res.Skipped) != 1 || len(res.Formatted) != 1 {
		t.Fatalf("format beside a dir of this cluster: %+v %v", res, err)
	}
}
