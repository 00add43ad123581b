package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// Reload fan-out: an operator's reload on one replica is published on the fleet's reload subject;
// every other replica reloads and answers with the profile set it serves afterwards.

// ReloadReply is one replica's answer to a fleet reload.
type ReloadReply struct {
	Replica  string `json:"replica"`
	Instance string `json:"instance"`
	Digest   string `json:"digest"`          // the profile set served after the reload
	Refused  int    `json:"refused"`         // profile files the reload refused (their last good version still served)
	Error    string `json:"error,omitempty"` // the reload failed as a whole
	Differs  bool   `json:"digest_differs"`  // serves other profiles than the replica asked
}

func (f *Fleet) reloadSubject() string { return "plimsoll." + f.opt.Name + ".reload" }

// OnReload makes this replica answer the fleet's reloads with reload's outcome, until Close.
func (f *Fleet) OnReload(reload func() ReloadReply) error {
	_, err := f.nc.Subscribe(f.reloadSubject(), func(m *nats.Msg) {
		if string(m.Data) == f.instance {
			return // the asking replica reloaded itself already
		}
		r := reload()
		r.Replica, r.Instance = f.opt.Replica, f.instance
		b, _ := json.Marshal(r)
		_ = m.Respond(b)
	})
	if err != nil {
		return fmt.Errorf("fleet: reload subject: %w", err)
	}
	return nil
}

// Reload asks every other replica to reload and gathers their answers: it returns once every live
// member of the roster has answered, or when ctx ends, with the names of those that did not.
func (f *Fleet) Reload(ctx context.Context, ownDigest string) (replies []ReloadReply, missing []string, err error) {
	inbox := f.nc.NewRespInbox()
	sub, err := f.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, nil, fmt.Errorf("fleet: reload: %w", err)
	}
	defer sub.Unsubscribe()
	if err := f.nc.PublishRequest(f.reloadSubject(), inbox, []byte(f.instance)); err != nil {
		return nil, nil, fmt.Errorf("fleet: reload: %w", err)
	}
	want := map[string]string{} // instance → replica, the live others
	for _, m := range f.Members() {
		if !m.Stale && m.Instance != f.instance {
			want[m.Instance] = m.Replica
		}
	}
	for len(want) > 0 {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			break // ctx ended: the rest are missing
		}
		var r ReloadReply
		if json.Unmarshal(m.Data, &r) != nil {
			continue
		}
		r.Differs = r.Digest != ownDigest
		delete(want, r.Instance)
		replies = append(replies, r)
	}
	for _, name := range want {
		missing = append(missing, name)
	}
	return replies, missing, nil
}

// ReloadWait bounds how long an operator's reload waits for the other replicas' answers.
const ReloadWait = 10 * time.Second
