//go:build !wasip1 || plimsoll_extism

package plimsoll

import "github.com/plimsoll/plimsoll/abi"

// roundTrip is the transport Do uses. Outside a plimsoll guest there is no host; tests replace it,
// and so does an Extism plugin (preamble/extism-go, built with -tags plimsoll_extism) through
// UseTransport.
var roundTrip = func([]byte) ([]byte, error) { return nil, ErrNoHost }

// calls is the dispatcher Go and Wait use. Where there are no concurrent calls (outside a
// plimsoll guest, and in an Extism plugin) each call is made at submission through roundTrip.
var calls = &dispatcher{imports: &inline{}}

// inline plays the ABI v2 imports over roundTrip, one call at a time.
type inline struct {
	next      int32
	done      map[int32][]byte
	completed []uint32
}

func (in *inline) submit(req []byte) int32 {
	raw, err := roundTrip(req)
	if err != nil {
		return abi.ErrNoRun
	}
	in.next++
	if in.done == nil {
		in.done = map[int32][]byte{}
	}
	in.done[in.next] = raw
	in.completed = append(in.completed, uint32(in.next))
	return in.next
}

func (in *inline) wait(ids []uint32, _ uint32) int32 {
	n := copy(ids, in.completed)
	in.completed = in.completed[n:]
	return int32(n)
}

func (in *inline) result(id int32, buf []byte) int32 {
	raw, ok := in.done[id]
	if !ok {
		return abi.ErrUnknown
	}
	if len(raw) > len(buf) {
		return int32(len(raw))
	}
	delete(in.done, id)
	return int32(copy(buf, raw))
}
