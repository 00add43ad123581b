//go:build unix

package server_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used (user + system): a figure's cost, apart
// from the time spent waiting for a core on a shared machine.
func processCPU() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
