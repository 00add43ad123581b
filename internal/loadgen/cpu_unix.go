//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPU is this process's user and system CPU time.
func processCPU() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
