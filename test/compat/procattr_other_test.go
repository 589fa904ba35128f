//go:build !linux

package compat

import "syscall"

// brokerProcAttr has no parent-death signal outside Linux; the test cleanup
// still stops every broker.
func brokerProcAttr() *syscall.SysProcAttr { return nil }
