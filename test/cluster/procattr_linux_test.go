package cluster

import "syscall"

// nodeProcAttr makes the kernel SIGKILL a node if the test binary dies (a
// panic or `go test -timeout`), so no node outlives its test run. The
// setting survives `ip netns exec`, which execs the node in place.
func nodeProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
