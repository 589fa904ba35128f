package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The network-partition test's private network: a bridge in a namespace
// of its own, one namespace per node and one for the test's clients, each
// joined to the bridge by a veth pair. The addresses exist only inside
// these namespaces, so they clash with nothing on the host.
const (
	netnsPrefix    = "vltc"          // namespace names: vltc<pid>-<role>
	netnsSubnet    = "10.213.77."    // /24 on the bridge
	netnsClientIP  = "10.213.77.100" // the test's clients
	netnsBroker    = 9092
	netnsRaft      = 9093
	netnsBridgeDev = "br0"
)

// setnsTrap is setns(2)'s system call number on this architecture (the
// frozen syscall package does not define it); 0 if unknown here.
var setnsTrap = map[string]uintptr{
	"amd64": 308, "arm64": 268, "riscv64": 268, "loong64": 268, "386": 346, "arm": 375,
	"ppc64": 350, "ppc64le": 350, "s390x": 339,
}[runtime.GOARCH]

// netnsTopology runs node i as `ip netns exec vltc<pid>-n<i> vltava …`
// listening on 10.213.77.<i>; the test's clients dial from the client
// namespace. Partitions are blackhole routes added inside the namespaces.
type netnsTopology struct {
	t      testing.TB
	ipBin  string
	prefix string
	nodes  int
}

// netnsUnavailable returns why network namespaces cannot be used here, or
// "" if they can (root, iproute2, and a trial `ip netns add` succeeds).
func netnsUnavailable() string {
	if setnsTrap == 0 {
		return "setns(2) system call number unknown for GOARCH=" + runtime.GOARCH
	}
	if os.Geteuid() != 0 {
		return "not root: creating network namespaces needs CAP_SYS_ADMIN"
	}
	ipBin, err := exec.LookPath("ip")
	if err != nil {
		return "iproute2's ip command is not installed"
	}
	probe := fmt.Sprintf("%s%d-probe", netnsPrefix, os.Getpid())
	if out, err := exec.Command(ipBin, "netns", "add", probe).CombinedOutput(); err != nil {
		return fmt.Sprintf("`ip netns add` fails: %v: %s", err, strings.TrimSpace(string(out)))
	}
	_ = exec.Command(ipBin, "netns", "del", probe).Run()
	return ""
}

// newNetnsTopology creates the namespaces, bridge and veth pairs for n
// nodes and a client, and removes them at cleanup (also after a failure).
// Namespaces left by an earlier run that died are removed first.
func newNetnsTopology(t testing.TB, n int) *netnsTopology {
	t.Helper()
	ipBin, err := exec.LookPath("ip")
	if err != nil {
		t.Fatal(err)
	}
	removeStaleNetns(ipBin)
	nt := &netnsTopology{t: t, ipBin: ipBin, prefix: fmt.Sprintf("%s%d-", netnsPrefix, os.Getpid()), nodes: n}
	t.Cleanup(nt.teardown)
	br := nt.ns("br")
	nt.ip("netns", "add", br)
	nt.ip("-n", br, "link", "add", netnsBridgeDev, "type", "bridge")
	nt.ip("-n", br, "link", "set", netnsBridgeDev, "up")
	join := func(role, addr string) {
		ns := nt.ns(role)
		nt.ip("netns", "add", ns)
		nt.ip("-n", ns, "link", "set", "lo", "up")
		nt.ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "v-"+role, "netns", br)
		nt.ip("-n", ns, "addr", "add", addr+"/24", "dev", "eth0")
		nt.ip("-n", ns, "link", "set", "eth0", "up")
		nt.ip("-n", br, "link", "set", "v-"+role, "master", netnsBridgeDev)
		nt.ip("-n", br, "link", "set", "v-"+role, "up")
	}
	for id := 1; id <= n; id++ {
		join("n"+strconv.Itoa(id), nt.nodeIP(int32(id)))
	}
	join("cl", netnsClientIP)
	return nt
}

// removeStaleNetns deletes this suite's namespaces whose creating test
// process is gone.
func removeStaleNetns(ipBin string) {
	out, err := exec.Command(ipBin, "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, netnsPrefix)
		if !ok {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) == nil {
			continue // its test is still running
		}
		_ = exec.Command(ipBin, "netns", "del", name).Run()
	}
}

func (nt *netnsTopology) ns(role string) string { return nt.prefix + role }

func (nt *netnsTopology) nodeIP(id int32) string { return netnsSubnet + strconv.Itoa(int(id)) }

// ip runs an ip command and fails the test if it fails.
func (nt *netnsTopology) ip(args ...string) {
	nt.t.Helper()
	if out, err := exec.Command(nt.ipBin, args...).CombinedOutput(); err != nil {
		nt.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
}

func (nt *netnsTopology) teardown() {
	// Deleting a namespace deletes its end of every veth pair, and with it
	// the peer; nodes were already killed by the cluster's cleanup, which
	// was registered later and so ran first.
	roles := []string{"cl", "br"}
	for id := 1; id <= nt.nodes; id++ {
		roles = append(roles, "n"+strconv.Itoa(id))
	}
	for _, r := range roles {
		_ = exec.Command(nt.ipBin, "netns", "del", nt.ns(r)).Run()
	}
}

func (nt *netnsTopology) brokerAddr(id int32) string {
	return net.JoinHostPort(nt.nodeIP(id), strconv.Itoa(netnsBroker))
}

func (nt *netnsTopology) controllerAddr(id int32) string {
	return net.JoinHostPort(nt.nodeIP(id), strconv.Itoa(netnsRaft))
}

func (nt *netnsTopology) command(id int32, bin string, args []string) *exec.Cmd {
	// ip netns exec execs the program in place: the pid the harness
	// signals is the node's own.
	return exec.Command(nt.ipBin, append([]string{"netns", "exec", nt.ns("n" + strconv.Itoa(int(id))), bin}, args...)...)
}

func (nt *netnsTopology) describe() string {
	return fmt.Sprintf("network namespaces %s*, subnet %s0/24", nt.prefix, netnsSubnet)
}

// dial connects from the client namespace: the socket is created on an OS
// thread switched into that namespace (a socket stays in the namespace it
// was created in), and the thread is switched back before it is released.
// Threads must not exit here: a node started from a thread gets its
// parent-death signal when that thread ends.
func (nt *netnsTopology) dial() func(context.Context, string, string) (net.Conn, error) {
	path := "/var/run/netns/" + nt.ns("cl")
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			conn net.Conn
			err  error
		}
		ch := make(chan result, 1)
		go func() {
			runtime.LockOSThread()
			conn, restored, err := dialInNetns(ctx, path, network, addr)
			if restored {
				runtime.UnlockOSThread()
			} // else: the thread stays locked and exits with this goroutine
			ch <- result{conn, err}
		}()
		r := <-ch
		return r.conn, r.err
	}
}

// dialInNetns dials from the network namespace at path on the calling
// (locked) thread and switches the thread back to its own namespace;
// restored reports whether that worked.
func dialInNetns(ctx context.Context, path, network, addr string) (conn net.Conn, restored bool, err error) {
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, true, err
	}
	defer self.Close()
	target, err := os.Open(path)
	if err != nil {
		return nil, true, err
	}
	defer target.Close()
	if err := setns(target); err != nil {
		return nil, true, fmt.Errorf("entering %s: %w", path, err)
	}
	var d net.Dialer
	conn, err = d.DialContext(ctx, network, addr)
	return conn, setns(self) == nil, err
}

func setns(f *os.File) error {
	if _, _, errno := syscall.RawSyscall(setnsTrap, f.Fd(), syscall.CLONE_NEWNET, 0); errno != 0 {
		return errno
	}
	return nil
}

// cut makes the network drop every packet between node a and the nodes in
// others, both ways (blackhole routes in each namespace); the client
// namespace still reaches everyone.
func (nt *netnsTopology) cut(a int32, others ...int32) error {
	return nt.blackhole("add", a, others)
}

// heal removes what cut added.
func (nt *netnsTopology) heal(a int32, others ...int32) error {
	return nt.blackhole("del", a, others)
}

func (nt *netnsTopology) blackhole(op string, a int32, others []int32) error {
	var errs []error
	run := func(ns, dst string) {
		args := []string{"-n", ns, "route", op, "blackhole", dst + "/32"}
		if out, err := exec.Command(nt.ipBin, args...).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out))))
		}
	}
	for _, b := range others {
		run(nt.ns("n"+strconv.Itoa(int(a))), nt.nodeIP(b))
		run(nt.ns("n"+strconv.Itoa(int(b))), nt.nodeIP(a))
	}
	return errors.Join(errs...)
}
