package host

import (
	"bytes"
	"context"
	"fmt"

	"github.com/plimsoll/plimsoll/profiles"
)

// capped collects a guest's stdout or stderr up to a limit. The write that goes over it keeps
// what fits, fails, and ends the run with a LimitError.
type capped struct {
	buf   bytes.Buffer
	max   int64
	what  string // "output" or "log"
	field string // the profile field
	stop  context.CancelCauseFunc
	err   error
	// onWrite, when set, sees each write's kept bytes as they arrive (a daemon streams the log).
	onWrite func([]byte)
}

func (c *capped) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	room := c.max - int64(c.buf.Len())
	if int64(len(p)) <= room {
		c.notify(p)
		return c.buf.Write(p)
	}
	c.notify(p[:room])
	c.buf.Write(p[:room])
	c.err = &LimitError{Limit: c.field, Message: fmt.Sprintf("%s limit %s (%s) reached", c.what, c.field, profiles.FormatSize(c.max))}
	c.stop(c.err)
	return int(room), c.err
}

func (c *capped) notify(p []byte) {
	if c.onWrite != nil && len(p) > 0 {
		c.onWrite(p)
	}
}
