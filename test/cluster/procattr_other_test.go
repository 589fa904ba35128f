//go:build !linux

package cluster

import "syscall"

// nodeProcAttr has no parent-death signal outside Linux; the test cleanup
// kills the nodes.
func nodeProcAttr() *syscall.SysProcAttr { return nil }
