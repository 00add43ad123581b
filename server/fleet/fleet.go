// Package fleet shares a daemon's operator actions with the other replicas of its fleet through a
// NATS JetStream key-value bucket: a force-open or clear written by one replica is watched into
// every replica's flags. The bucket is the flags' durable home, so they survive every restart.
package fleet

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Flag is one operator action as stored in the bucket: a profile (Route empty) or one of its
// routes forced open, with who did it, why, from which replica and when.
type Flag struct {
	Profile  string    `json:"profile"`
	Route    string    `json:"route,omitempty"`
	Operator string    `json:"operator,omitempty"`
	Reason   string    `json:"reason"`
	Replica  string    `json:"replica"`
	Since    time.Time `json:"since"`
}

// Key is the flag's bucket key: its names base64url-encoded, since NATS keys allow neither the
// spaces nor the '*' a route pattern holds.
func (f Flag) Key() string {
	k := "profile." + enc(f.Profile)
	if f.Route != "" {
		k = "route." + enc(f.Profile) + "." + enc(f.Route)
	}
	return k
}

func enc(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// Change is one flag set (Set true) or cleared, as the watch delivers it.
type Change struct {
	Flag Flag
	Set  bool
}

// Options say which NATS to join and as whom.
type Options struct {
	URL       string // nats://host:port
	Name      string // the fleet's name; its bucket is plimsoll_<Name>_flags
	Replica   string // this replica's name, stamped on the flags it writes
	CredsFile string // NATS credentials file, if any
	Token     string // NATS token, if any
	CAFile    string // TLS: the CA that signs the server's certificate
	CertFile  string // TLS client certificate and key, if the server asks for one
	KeyFile   string
	Replicas  int              // copies JetStream keeps of each bucket in a NATS cluster (1–5); 0 is 1
	Now       func() time.Time // the clock heartbeats are stamped and judged by; nil is time.Now
}

// ErrBadOptions is returned by Join for options that cannot name a fleet.
var ErrBadOptions = errors.New("fleet: bad options")

// Fleet is one replica's membership: its connection, the flags bucket and the watch on it.
type Fleet struct {
	opt   Options
	nc    *nats.Conn
	kv    jetstream.KeyValue
	apply func(Change)

	mu       sync.Mutex
	degraded string          // why the fleet is unreachable; "" while connected
	roster   map[string]Beat // the last heartbeat of every instance, by key (beat.go)
	own      Beat            // this replica's last heartbeat

	instance  string // this process, told apart from another with the same Replica name
	beats     jetstream.KeyValue
	beatWatch jetstream.KeyWatcher
	done      chan struct{} // closed first by Close: the heartbeats stop, a re-watch gives up
	closeOnce sync.Once
	beating   sync.WaitGroup // the heartbeat loop, waited for so no beat lands after Close deletes it

	applyMu sync.Mutex           // one watch applies at a time
	watch   jetstream.KeyWatcher // the current watch; a stopped one's stragglers are dropped
	known   map[string]Flag      // the flags applied, by key: a re-watch clears those gone meanwhile
	closed  bool
}

// Join connects to NATS, opens (or makes) the fleet's bucket and applies every flag in it before
// it returns, so the caller reports ready only with the fleet's current set applied. Later
// changes reach apply from the watch, in the bucket's order.
func Join(ctx context.Context, opt Options, apply func(Change)) (*Fleet, error) {
	if opt.URL == "" || opt.Name == "" || opt.Replica == "" || strings.ContainsAny(opt.Name, " .*>") {
		return nil, fmt.Errorf("%w: URL, Name (no spaces, dots or wildcards) and Replica are required (URL=%q Name=%q Replica=%q)",
			ErrBadOptions, opt.URL, opt.Name, opt.Replica)
	}
	if opt.Replicas < 0 || opt.Replicas > 5 {
		return nil, fmt.Errorf("%w: Replicas %d: JetStream keeps 1 to 5 copies of a bucket", ErrBadOptions, opt.Replicas)
	}
	f := &Fleet{opt: opt, apply: apply, known: map[string]Flag{}, roster: map[string]Beat{}, instance: newInstance(), done: make(chan struct{})}
	nc, err := nats.Connect(opt.URL, f.natsOptions()...)
	if err != nil {
		return nil, fmt.Errorf("fleet: connect %s: %w", opt.URL, err)
	}
	f.nc = nc
	if err := f.open(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return f, nil
}

func (f *Fleet) natsOptions() []nats.Option {
	o := []nats.Option{
		nats.Name("plimsoll " + f.opt.Name + "/" + f.opt.Replica),
		nats.MaxReconnects(-1), // a partition heals; never give up on the fleet
		// No write is queued while cut off: an action refused as "this replica only" must not
		// land on the heal, over whatever the fleet decided meanwhile.
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { f.setDegraded(fmt.Sprint("NATS unreachable: ", err)) }),
		nats.ReconnectHandler(func(*nats.Conn) { go f.rewatch() }),
	}
	if f.opt.CredsFile != "" {
		o = append(o, nats.UserCredentials(f.opt.CredsFile))
	}
	if f.opt.Token != "" {
		o = append(o, nats.Token(f.opt.Token))
	}
	if f.opt.CAFile != "" {
		o = append(o, nats.RootCAs(f.opt.CAFile))
	}
	if f.opt.CertFile != "" {
		o = append(o, nats.ClientCert(f.opt.CertFile, f.opt.KeyFile))
	}
	return o
}

// open makes the bucket if need be and applies its current flags.
func (f *Fleet) open(ctx context.Context) error {
	js, err := jetstream.New(f.nc)
	if err != nil {
		return fmt.Errorf("fleet: jetstream: %w", err)
	}
	f.kv, err = makeBucket(ctx, js, jetstream.KeyValueConfig{
		Bucket: "plimsoll_" + f.opt.Name + "_flags", Description: "plimsoll operator actions (force-open flags)", Replicas: f.opt.Replicas,
	})
	if err != nil {
		return fmt.Errorf("fleet: flags bucket: %w", err)
	}
	if err := f.openBeats(ctx, js); err != nil {
		return err
	}
	return f.watchAll(ctx)
}

// watchAll starts a watch, applies the bucket's current set, clears the flags applied before but
// gone from the bucket since (a clear made while this replica was cut off is not resurrected),
// and then follows the watch's later changes.
func (f *Fleet) watchAll(ctx context.Context) error {
	w, err := watchPatiently(ctx, f.kv) // lives until Close, not until ctx ends
	if err != nil {
		return fmt.Errorf("fleet: watch flags: %w", err)
	}
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	if f.closed {
		return w.Stop()
	}
	if f.watch != nil {
		_ = f.watch.Stop()
	}
	f.watch = w
	seen := map[string]bool{}
	for {
		select {
		case e := <-w.Updates():
			if e != nil {
				seen[e.Key()] = true
				f.deliver(e)
				continue
			}
			for k, fl := range f.known { // the end of the current set
				if !seen[k] {
					delete(f.known, k)
					f.apply(Change{Flag: fl})
				}
			}
			go f.follow(w)
			return nil
		case <-ctx.Done():
			_ = w.Stop()
			return fmt.Errorf("fleet: applying the current flags: %w", ctx.Err())
		case <-f.done:
			_ = w.Stop()
			return errors.New("fleet: closed while applying the current flags")
		}
	}
}

// watchPatience is how long a watch's start is asked again when NATS answers too slowly (a
// timeout, not a refusal): a loaded server is no reason for a replica to fail its start.
const watchPatience = 30 * time.Second

// watchPatiently starts a watch of every key in kv, asking again after a timeout until
// watchPatience has passed or ctx ends; the watch itself lives until stopped.
func watchPatiently(ctx context.Context, kv jetstream.KeyValue, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	give := time.Now().Add(watchPatience)
	for {
		w, err := kv.WatchAll(context.Background(), opts...)
		slow := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
		if !slow || ctx.Err() != nil || time.Now().After(give) {
			return w, err
		}
	}
}

// rewatch runs after a reconnect: the watch is started afresh rather than left to notice the
// outage by missed heartbeats, which takes many seconds. It retries until it succeeds, the
// connection drops again (the next reconnect starts over) or the fleet is closed: a NATS cluster
// may still be electing the bucket's leader when a replica reconnects to a surviving node.
func (f *Fleet) rewatch() {
	for {
		err := f.rewatchOnce()
		if err == nil {
			f.setDegraded("")
			return
		}
		f.setDegraded(err.Error())
		select {
		case <-f.done:
			return
		case <-time.After(time.Second):
		}
		if !f.nc.IsConnected() {
			return
		}
	}
}

func (f *Fleet) rewatchOnce() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.watchAll(ctx); err != nil {
		return fmt.Errorf("NATS is back but the flags could not be re-read: %w", err)
	}
	if err := f.watchBeats(); err != nil {
		return fmt.Errorf("NATS is back but the replicas could not be re-read: %w", err)
	}
	return nil
}

// follow applies w's later changes until w is stopped or replaced.
func (f *Fleet) follow(w jetstream.KeyWatcher) {
	for e := range w.Updates() {
		f.applyMu.Lock()
		if e != nil && f.watch == w {
			f.deliver(e)
		}
		f.applyMu.Unlock()
	}
}

// deliver applies one entry; the caller holds applyMu.
func (f *Fleet) deliver(e jetstream.KeyValueEntry) {
	if e.Operation() != jetstream.KeyValuePut {
		fl := keyFlag(e.Key())
		delete(f.known, e.Key())
		f.apply(Change{Flag: fl})
		return
	}
	var fl Flag
	if err := json.Unmarshal(e.Value(), &fl); err != nil || fl.Key() != e.Key() {
		return // not a well-formed flag: a bucket writer is trusted only with those
	}
	f.known[e.Key()] = fl
	f.apply(Change{Flag: fl, Set: true})
}

// keyFlag recovers a cleared flag's names from its key.
func keyFlag(key string) Flag {
	parts := strings.Split(key, ".")
	dec := func(s string) string { b, _ := base64.RawURLEncoding.DecodeString(s); return string(b) }
	switch {
	case len(parts) == 2 && parts[0] == "profile":
		return Flag{Profile: dec(parts[1])}
	case len(parts) == 3 && parts[0] == "route":
		return Flag{Profile: dec(parts[1]), Route: dec(parts[2])}
	}
	return Flag{}
}

// Set writes a flag to the bucket, stamped with this replica; every replica (this one included)
// applies it from the watch.
func (f *Fleet) Set(ctx context.Context, fl Flag) error {
	fl.Replica = f.opt.Replica
	b, err := json.Marshal(fl)
	if err != nil {
		return err
	}
	if _, err := f.kv.Put(ctx, fl.Key(), b); err != nil {
		return fmt.Errorf("fleet: set %s: %w", fl.Key(), err)
	}
	return nil
}

// Clear deletes a flag from the bucket; every replica lifts it from the watch.
func (f *Fleet) Clear(ctx context.Context, profile, route string) error {
	k := Flag{Profile: profile, Route: route}.Key()
	if err := f.kv.Delete(ctx, k); err != nil {
		return fmt.Errorf("fleet: clear %s: %w", k, err)
	}
	return nil
}

// Degraded says why the fleet is unreachable now; "" while connected.
func (f *Fleet) Degraded() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.degraded
}

func (f *Fleet) setDegraded(why string) {
	f.mu.Lock()
	f.degraded = why
	f.mu.Unlock()
}

// Close stops the watches and heartbeats and leaves the fleet (its heartbeat deleted, so it is not
// shown stale); the flags stay in the bucket.
func (f *Fleet) Close() {
	f.closeOnce.Do(func() { close(f.done) }) // before applyMu, which a re-watch holds while it reads
	f.applyMu.Lock()
	if f.closed {
		f.applyMu.Unlock()
		return
	}
	f.closed = true
	if f.watch != nil {
		_ = f.watch.Stop()
	}
	f.applyMu.Unlock()
	f.beating.Wait()
	f.mu.Lock()
	bw := f.beatWatch
	f.mu.Unlock()
	_ = bw.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_ = f.beats.Delete(ctx, Beat{Replica: f.opt.Replica, Instance: f.instance}.key())
	cancel()
	f.nc.Close()
}
