package host

import "syscall"

// reserve maps n bytes of zeroed, private memory. MAP_NORESERVE keeps a large reservation from
// counting against the commit limit: pages cost only once the guest touches them.
func reserve(n uint64) ([]byte, error) {
	if n == 0 || n > 1<<32 {
		return nil, syscall.EINVAL
	}
	return syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_NORESERVE)
}

func unreserve(b []byte) { _ = syscall.Munmap(b) }
