//go:build !unix

package main

import "time"

// processCPU is not measured off unix: CPU per run reads 0 there.
func processCPU() time.Duration { return 0 }
