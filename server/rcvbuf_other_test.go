//go:build !unix

package server_test

import "syscall"

// smallReceiveBuffer leaves the socket as it is: the flood's size alone stalls the writes.
func smallReceiveBuffer(_, _ string, _ syscall.RawConn) error { return nil }
