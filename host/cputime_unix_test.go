//go:build unix

package host

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used (user + system). On a shared machine a
// benchmark's CPU per operation varies far less than its wall time: waiting for a core costs none.
func processCPU() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
