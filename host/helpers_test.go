package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/internal/testcache"
	"github.com/plimsoll/plimsoll/profiles"
)

// secret is the test credential. No test output may contain it.
const secret = "s3cr3t-t0ken-5e1f"

func testGetenv(k string) string {
	if k == "PETS_TOKEN" {
		return secret
	}
	return ""
}

// testCacheDir is shared by every test package in a run, so the JS runtime compiles once.
func testCacheDir() string { return testcache.Dir() }

var (
	sharedOnce sync.Once
	sharedRT   *Runtime
	sharedErr  error
)

// shared is one Runtime for the tests that need no special options. TestMain closes it.
func shared(t testing.TB) *Runtime {
	sharedOnce.Do(func() {
		sharedRT, sharedErr = New(context.Background(), Options{CacheDir: testCacheDir(), Getenv: testGetenv})
	})
	require.NoError(t, sharedErr)
	return sharedRT
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedRT != nil {
		if err := sharedRT.Close(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "close:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func newRuntime(t testing.TB, opts Options) *Runtime {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = testCacheDir()
	}
	if opts.Getenv == nil {
		opts.Getenv = testGetenv
	}
	rt, err := New(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(context.Background())) })
	return rt
}

// petstore is an upstream that counts its requests and records the credential it was sent.
// hits receives a signal (dropped when one is already waiting) as each request is answered.
type petstore struct {
	*httptest.Server
	requests atomic.Int64
	hits     chan struct{}
	mu       sync.Mutex
	auth     []string
}

func newPetstore(t testing.TB) *petstore {
	ps := &petstore{hits: make(chan struct{}, 1)}
	ps.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ps.requests.Add(1)
		ps.mu.Lock()
		ps.auth = append(ps.auth, r.Header.Get("Authorization"))
		ps.mu.Unlock()
		defer func() {
			select {
			case ps.hits <- struct{}{}:
			default:
			}
		}()
		switch {
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/pets/"):
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":%q,"name":"Rex"}`, strings.TrimPrefix(r.URL.Path, "/v1/pets/"))
		case r.URL.Path == "/v1/echo":
			// An upstream that echoes what it was sent, credential included.
			w.Header().Set("X-Echo-Auth", r.Header.Get("Authorization"))
			fmt.Fprintf(w, "auth=%s", r.Header.Get("Authorization"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ps.Close)
	return ps
}

// profile writes a profile for base into a temp dir and loads it. extra is appended to the YAML.
func profile(t testing.TB, base, extra string) *profiles.Profile {
	t.Helper()
	yaml := fmt.Sprintf(`base_url: %s/v1
credential:
  env: PETS_TOKEN
  scheme: Bearer
routes:
  - GET /pets/*
  - GET /echo
%s`, base, extra)
	path := filepath.Join(t.TempDir(), "pets.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o644))
	p, err := profiles.LoadFile(path)
	require.NoError(t, err)
	return p
}

// guestCmd is a Go test guest command (see guests/testguest/guest).
func guestCmd(fields map[string]any) []byte {
	b, err := json.Marshal(fields)
	if err != nil {
		panic(err)
	}
	return b
}

// jsEngine is the runtime's JavaScript kind, for tests that look inside it.
func (rt *Runtime) jsEngine() *jsKind { return rt.kinds[KindJS].(*jsKind) }
