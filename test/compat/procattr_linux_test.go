package compat

import "syscall"

// brokerProcAttr makes the kernel SIGKILL a broker if the test binary dies
// (a panic or `go test -timeout`), so no broker outlives its test run.
func brokerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
