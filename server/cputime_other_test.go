//go:build !unix

package server_test

import "time"

// processCPU is not measured here: figures report 0 CPU.
func processCPU() time.Duration { return 0 }
