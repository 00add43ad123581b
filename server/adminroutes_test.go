package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/plimsoll/plimsoll/internal/testcache"
)

// TestAdminRouteTable walks the admin table: every route refuses a request without the admin
// token or with another one, answers a method it does not take with 405 naming the ones it
// does, and is on the admin plane only.
func TestAdminRouteTable(t *testing.T) {
	const token = "admin-token-0123456789abcdef"
	s, err := New(context.Background(), Config{ProfilesDir: t.TempDir(), AuditOut: io.Discard, CacheDir: testcache.Dir(),
		AdminTokenEnv: "ADMIN_TOKEN", Getenv: func(k string) string { return map[string]string{"ADMIN_TOKEN": token}[k] },
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	admin := httptest.NewServer(s.AdminHandler())
	defer admin.Close()
	api := httptest.NewServer(s.Handler())
	defer api.Close()

	methods := map[string][]string{} // path → the methods the table gives it
	for _, r := range s.adminRoutes() {
		method, path, _ := strings.Cut(r.pattern, " ")
		methods[path] = append(methods[path], method)
	}
	if len(methods) == 0 {
		t.Fatal("the admin table is empty")
	}
	for _, r := range s.adminRoutes() {
		method, pattern, _ := strings.Cut(r.pattern, " ")
		path := regexp.MustCompile(`\{[a-z]+\}`).ReplaceAllString(pattern, "x")
		for _, bearer := range []string{"", "Bearer not-the-admin-token-at-all"} {
			if code, _ := send(t, admin.URL, method, path, bearer); code != http.StatusUnauthorized {
				t.Errorf("%s %s with Authorization %q: %d, want 401", method, path, bearer, code)
			}
		}
		if code, _ := send(t, admin.URL, method, path, "Bearer "+token); code == http.StatusUnauthorized || code == http.StatusNotFound && !strings.Contains(pattern, "{") {
			t.Errorf("%s %s with the admin token: %d", method, path, code)
		}
		code, allow := send(t, admin.URL, http.MethodPatch, path, "Bearer "+token)
		if code != http.StatusMethodNotAllowed {
			t.Errorf("PATCH %s: %d, want 405", path, code)
		}
		for _, m := range methods[pattern] {
			if !strings.Contains(allow, m) {
				t.Errorf("PATCH %s: Allow %q does not name %s", path, allow, m)
			}
		}
		if code, _ := send(t, api.URL, method, path, "Bearer "+token); code != http.StatusNotFound {
			t.Errorf("%s %s on the API handler: %d, want 404 (the admin plane only)", method, path, code)
		}
	}
}

// send makes one request and returns its status and Allow header.
func send(t *testing.T, base, method, path, authorization string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader("{}"))
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Allow")
}
