package main

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/internal/natstest"
	"github.com/plimsoll/plimsoll/server"
	"github.com/plimsoll/plimsoll/server/fleet"
)

// `admin force-open` names its operator ($USER, or --operator): the flag in the fleet's bucket
// carries it, as another member of the fleet reads it.
func TestAdminForceOpenNamesTheOperatorInTheFleet(t *testing.T) {
	ns := natstest.Start(t)
	opt := fleet.Options{URL: ns.ClientURL(), Name: "cli", Replica: "r1"}
	_, adminAddr := inProcessDaemon(t, server.Config{ProfilesDir: filepath.Join(serveDir(t, "http://127.0.0.1:1"), "profiles"), Fleet: &opt,
		Getenv: func(string) string { return "" }})

	var mu sync.Mutex
	got := map[string]string{} // profile → operator, as the bucket says
	watcher := opt
	watcher.Replica = "watcher"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := fleet.Join(ctx, watcher, func(c fleet.Change) {
		mu.Lock()
		defer mu.Unlock()
		if c.Set {
			got[c.Flag.Profile] = c.Flag.Operator
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--reason", "INC-9"}, "ana"}, // $USER
		{[]string{"--reason", "INC-9", "--operator", "bo"}, "bo"},
	} {
		code, out, errs := invoke(t, "", map[string]string{"USER": "ana"}, append([]string{"admin", "force-open", "api", "--admin", adminAddr}, tc.args...)...)
		if code != 0 {
			t.Fatalf("force-open %v: %d %s%s", tc.args, code, out, errs)
		}
		waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return got["api"] == tc.want }, "the bucket names operator "+tc.want)
	}
	// admin state lists the fleet's replicas from their heartbeats.
	waitFor(t, func() bool {
		code, out, _ := invoke(t, "", nil, "admin", "state", "--admin", adminAddr)
		return code == 0 && strings.Contains(out, "fleet cli, this replica r1") && strings.Contains(out, "\n  r1  ")
	}, "admin state lists replica r1")

	// A reload on r1 is answered by r2, which serves another profile set.
	opt2 := opt
	opt2.Replica = "r2"
	inProcessDaemon(t, server.Config{ProfilesDir: filepath.Join(serveDir(t, "http://127.0.0.1:2"), "profiles"), Fleet: &opt2,
		Getenv: func(string) string { return "" }})
	waitFor(t, func() bool {
		_, out, _ := invoke(t, "", nil, "admin", "state", "--admin", adminAddr)
		return strings.Contains(out, "\n  r2  ")
	}, "r1 lists r2")
	code, out, errs := invoke(t, "", nil, "admin", "reload", "--admin", adminAddr)
	if code != 0 || !strings.Contains(out, "fleet: replica r2 reloaded, profiles ") || !strings.Contains(out, "(OTHER PROFILES than this replica's ") {
		t.Fatalf("reload: %d\n%s%s", code, out, errs)
	}
}
