package host

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// image is a memory image in a sealed memfd, mapped copy-on-write into instances' memory.
type image struct {
	f    *os.File
	size int
}

// newImage puts b in a memfd and seals it: no one, the host included, can change it again.
func newImage(b []byte) (*image, error) {
	fd, err := unix.MemfdCreate("plimsoll-js-image", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "plimsoll-js-image")
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS,
		unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
		f.Close()
		return nil, err
	}
	return &image{f: f, size: len(b)}, nil
}

// mapInto maps the image privately over the start of mem, a reservation from reserve.
func (im *image) mapInto(mem []byte) bool {
	if len(mem) < im.size || im.size == 0 {
		return false
	}
	p, err := unix.MmapPtr(int(im.f.Fd()), 0, unsafe.Pointer(&mem[0]), uintptr(im.size),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED)
	return err == nil && p == unsafe.Pointer(&mem[0])
}

// copyTo copies the image into dst.
func (im *image) copyTo(dst []byte) error {
	if len(dst) < im.size {
		return errors.New("host: the memory is smaller than the image")
	}
	_, err := im.f.ReadAt(dst[:im.size], 0)
	return err
}

func (im *image) close() { im.f.Close() }
