//go:build unix

package server_test

import "syscall"

// smallReceiveBuffer caps a client socket's receive buffer before it connects, so a client
// that never reads stalls the daemon's writes after ~64 KiB, however the host tunes TCP.
func smallReceiveBuffer(_, _ string, c syscall.RawConn) error {
	var err error
	if cerr := c.Control(func(fd uintptr) {
		err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10)
	}); cerr != nil {
		return cerr
	}
	return err
}
