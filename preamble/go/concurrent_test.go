package plimsoll

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/abi"
)

// fakeHost plays ABI v2's host: it holds at most room calls, and completes them in submission
// order when waited for, answering each with 200 and its request's path.
type fakeHost struct {
	room      int
	next      int32
	held      map[int32][]byte // submitted, unread
	completed []int32
	maxHeld   int
	submits   int
}

func (f *fakeHost) submit(req []byte) int32 {
	if len(f.held) >= f.room {
		return abi.ErrInflight
	}
	f.submits++
	f.next++
	if f.held == nil {
		f.held = map[int32][]byte{}
	}
	f.held[f.next] = req
	f.maxHeld = max(f.maxHeld, len(f.held))
	return f.next
}

func (f *fakeHost) wait(ids []uint32, _ uint32) int32 {
	n := 0
	for id := int32(1); id <= f.next && n < len(ids); id++ {
		if _, ok := f.held[id]; ok && !f.reported(id) {
			ids[n] = uint32(id)
			f.completed = append(f.completed, id)
			n++
		}
	}
	return int32(n)
}

func (f *fakeHost) reported(id int32) bool {
	for _, c := range f.completed {
		if c == id {
			return true
		}
	}
	return false
}

func (f *fakeHost) result(id int32, buf []byte) int32 {
	req, ok := f.held[id]
	if !ok {
		return abi.ErrUnknown
	}
	env := fmt.Sprintf(`{"status":200,"headers":{},"body":%q}`, string(req))
	if len(env) > len(buf) {
		return int32(len(env))
	}
	copy(buf, env)
	delete(f.held, id)
	return int32(len(env))
}

func withFakeHost(t *testing.T, f *fakeHost) {
	old := calls
	calls = &dispatcher{imports: f}
	t.Cleanup(func() { calls = old })
}

// Calls over the host's room wait in the guest and go out as room is made; every call gets its
// own answer.
func TestGoQueuesOverTheInflightLimit(t *testing.T) {
	f := &fakeHost{room: 3}
	withFakeHost(t, f)
	var cs []*Call
	for i := range 10 {
		req, err := NewRequest("GET", fmt.Sprintf("/items/%d", i), nil)
		require.NoError(t, err)
		cs = append(cs, Go(req))
	}
	require.NoError(t, WaitAll(cs...))
	for i, c := range cs {
		resp, err := c.Wait()
		require.NoError(t, err)
		assert.Contains(t, resp.Text(), fmt.Sprintf(`"path":"/items/%d"`, i), "call %d got its own answer", i)
	}
	assert.Equal(t, 3, f.maxHeld, "never more than the host's room, and the room was used")
	assert.Equal(t, 10, f.submits, "no call was submitted twice")
}

// A response larger than the first buffer is fetched in a second step.
func TestGoFetchesALargeResultInTwoSteps(t *testing.T) {
	f := &fakeHost{room: 1}
	withFakeHost(t, f)
	long := "/" + string(make([]byte, 0))
	for len(long) < FirstBufferSize+10 {
		long += "abcdefgh"
	}
	c := Go(Request{Method: "GET", Path: long})
	resp, err := c.Wait()
	require.NoError(t, err)
	assert.Greater(t, len(resp.Body), FirstBufferSize)
}

// A host that refuses a submission outright fails that call with a HostError naming the code.
func TestGoReportsHostErrors(t *testing.T) {
	withFakeHost(t, &fakeHost{room: 0})
	calls.imports = refusing{}
	_, err := Go(Request{Method: "GET", Path: "/x"}).Wait()
	var he *HostError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, abi.HostSubmit, he.Func)
	assert.Equal(t, abi.ErrBounds, he.Code)
}

type refusing struct{}

func (refusing) submit([]byte) int32         { return abi.ErrBounds }
func (refusing) wait([]uint32, uint32) int32 { return 0 }
func (refusing) result(int32, []byte) int32  { return abi.ErrUnknown }

// Where there are no concurrent imports (tests, an Extism plugin), Go makes each call at
// submission through the blocking transport, and Wait answers as Do would.
func TestGoFallsBackToTheBlockingTransport(t *testing.T) {
	withBroker(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("path=" + r.URL.Path))
	}, "routes: [GET /items/*]\n")
	old := calls
	calls = &dispatcher{imports: &inline{}}
	t.Cleanup(func() { calls = old })
	a := Go(Request{Method: "GET", Path: "/items/1"})
	b := Go(Request{Method: "GET", Path: "/items/2"})
	require.NoError(t, WaitAll(a, b))
	resp, err := b.Wait()
	require.NoError(t, err)
	assert.Equal(t, "path=/v1/items/2", resp.Text())
	_, err = Go(Request{Method: "GET", Path: "/admin"}).Wait()
	assert.ErrorIs(t, err, ErrDenied)
}
