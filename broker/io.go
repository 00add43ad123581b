package broker

import (
	"bytes"
	"errors"
	"io"
	"net/http"
)

var errBodyTooLarge = errors.New("body over the cap")

func bodyReader(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

// readCapped reads at most max bytes of the body; one byte more is an error, whatever
// Content-Length claimed. A declared length only sizes the first buffer (one byte over, to see
// the end without growing), up to 64 KiB so that a claim alone cannot make the broker allocate
// much; it is never trusted as the end.
func readCapped(resp *http.Response, max int64) ([]byte, error) {
	defer resp.Body.Close()
	if resp.ContentLength > max {
		return nil, errBodyTooLarge
	}
	size := int64(512)
	if resp.ContentLength >= 0 {
		size = min(resp.ContentLength+1, 64<<10)
	}
	b := make([]byte, 0, size)
	r := io.LimitReader(resp.Body, max+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow as io.ReadAll does
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if int64(len(b)) > max {
		return nil, errBodyTooLarge
	}
	return b, nil
}

// drain discards a probe's body so the connection can be reused, without reading much.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}
