package server

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plimsoll/plimsoll/internal/auditlog"
)

var testEnv = func(k string) string {
	if k == "A_TOKEN" {
		return "token-agent-a-0123456789"
	}
	return ""
}

func TestParseClients(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "b.token"), []byte("token-agent-b-9876543210\n"), 0o600)
	good := "clients:\n  - name: a\n    token_env: A_TOKEN\n    profiles: [petstore]\n  - name: b\n    token_file: b.token\n    profiles: [\"*\"]\n"
	cs, err := parseClients(filepath.Join(dir, "c.yaml"), []byte(good), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c := cs.Authenticate("token-agent-a-0123456789"); c == nil || c.Name != "a" || !c.May("petstore") || c.May("x") {
		t.Fatalf("a: %+v", c)
	}
	if c := cs.Authenticate("token-agent-b-9876543210"); c == nil || !c.May("anything") {
		t.Fatalf("b: %+v", c)
	}
	if cs.Authenticate("token-agent-a-012345678") != nil || cs.Authenticate("") != nil {
		t.Fatal("a wrong token authenticated")
	}
	toml := "[[clients]]\nname = \"a\"\ntoken_env = \"A_TOKEN\"\nprofiles = [\"p\"]\nruns_per_minute = 30\n"
	cs, err = parseClients("c.toml", []byte(toml), testEnv)
	if err != nil {
		t.Fatalf("toml: %v", err)
	}
	if c := cs.Authenticate("token-agent-a-0123456789"); c.RunsPerMinute != 30 || c.CallsPerMinute != 0 {
		t.Fatalf("toml quotas: %+v", c)
	}
	js := `{"clients":[{"name":"a","token_env":"A_TOKEN","profiles":["p"],"runs_per_minute":5,"calls_per_minute":120}]}`
	cs, err = parseClients("c.json", []byte(js), testEnv)
	if err != nil {
		t.Fatalf("json: %v", err)
	}
	if c := cs.Authenticate("token-agent-a-0123456789"); c.RunsPerMinute != 5 || c.CallsPerMinute != 120 {
		t.Fatalf("json quotas: %+v", c)
	}
}

func TestParseClientsRefusals(t *testing.T) {
	cases := []struct{ body, field, reason string }{
		{"clients: []", "clients", "non-empty"},
		{"clientz: []", "clientz", "unknown field"},
		{"clients:\n  - token_env: A_TOKEN\n    profiles: [p]", "clients[0].name", "required"},
		{"clients:\n  - name: a\n    profiles: [p]", "clients[0]", "exactly one of token_env and token_file"},
		{"clients:\n  - name: a\n    token_env: NOPE\n    profiles: [p]", "clients[0].token_env", "NOPE is not set"},
		{"clients:\n  - name: a\n    token_file: /nonexistent/t\n    profiles: [p]", "clients[0].token_file", "cannot read"},
		{"clients:\n  - name: a\n    token_env: A_TOKEN\n    profiles: []", "clients[0].profiles", "non-empty"},
		{"clients:\n  - name: a\n    token_env: A_TOKEN\n    profiles: [\"*\", p]", "clients[0].profiles[0]", "alone"},
		{"clients:\n  - name: a\n    token_env: A_TOKEN\n    profiles: [../x]", "clients[0].profiles[0]", "not a profile name"},
		{"clients:\n  - name: a\n    token_env: A_TOKEN\n    profiles: [p]\n    role: admin", "clients[0].role", "unknown field"},
		{"clients:\n  - name: a\n    token_env: A_TOKEN\n    profiles: [p]\n  - name: a\n    token_env: A_TOKEN\n    profiles: [p]", "clients[1].name", "also clients[0]"},
		{"clients:\n  - name: a\n    token_env: A_TOKEN\n    profiles: [p]\n  - name: b\n    token_env: A_TOKEN\n    profiles: [p]", "clients[1]", "same token"},
		{"clients: [", "", "does not parse"},
		{"clients:\n  - name: a\n    token_env: A_TOKEN\n    profiles: [p]\n    runs_per_minute: 0", "clients[0].runs_per_minute", `client "a": 0 must be a whole number from 1`},
		{"clients:\n  - name: a\n    token_env: A_TOKEN\n    profiles: [p]\n    calls_per_minute: -5", "clients[0].calls_per_minute", `client "a": -5 must be`},
		{"clients:\n  - name: a\n    token_env: A_TOKEN\n    profiles: [p]\n    calls_per_minute: 2.5", "clients[0].calls_per_minute", "whole number"},
		{"clients:\n  - name: a\n    token_env: A_TOKEN\n    profiles: [p]\n    runs_per_minute: \"10\"", "clients[0].runs_per_minute", `client "a": must be a whole number of runs per minute, not string`},
		{"clients:\n  - name: a\n    token_env: A_TOKEN\n    profiles: [p]\n    runs_per_minute: 2000000", "clients[0].runs_per_minute", "from 1 to 1000000"},
		{"clients:\n  - name: a\n    token_env: A_TOKEN\n    profiles: [p]\n    runs_per_hour: 5", "clients[0].runs_per_hour", "unknown field"},
	}
	for _, c := range cases {
		_, err := parseClients("clients.yaml", []byte(c.body), testEnv)
		var ce *ClientsError
		if !errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(ce.Reason, c.reason) || ce.File != "clients.yaml" {
			t.Errorf("%q: got %v, want field %q reason ~%q", c.body, err, c.field, c.reason)
		}
		if err != nil && strings.Contains(err.Error(), "token-agent") {
			t.Errorf("%q: the error shows the token", c.body)
		}
	}
	short := func(string) string { return "short" }
	_, err := parseClients("c.yaml", []byte("clients:\n  - name: a\n    token_env: T\n    profiles: [p]"), short)
	if err == nil || strings.Contains(err.Error(), "short\"") || !strings.Contains(err.Error(), "shorter than") {
		t.Errorf("short token: %v", err)
	}
	if _, err := parseClients("c.ini", nil, testEnv); err == nil {
		t.Error("an .ini file was accepted")
	}
}

func FuzzParseClients(f *testing.F) {
	f.Add([]byte("clients:\n  - name: a\n    token_env: A_TOKEN\n    profiles: [petstore]\n"))
	f.Add([]byte("clients:\n  - name: a\n    token_file: t\n    profiles: [\"*\"]\n"))
	f.Add([]byte("clients: [{name: 1, profiles: {}}]"))
	f.Add([]byte("clients:\n  - name: a\n    token_env: A_TOKEN\n    profiles: [p]\n    runs_per_minute: 5\n    calls_per_minute: 1e3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cs, err := parseClients("fuzz.yaml", b, testEnv)
		if err == nil && len(cs.list) == 0 {
			t.Fatal("accepted a file with no clients")
		}
		var ce *ClientsError
		if err != nil && !errors.As(err, &ce) {
			t.Fatalf("untyped error %v", err)
		}
		if err != nil && strings.Contains(err.Error(), "token-agent-a") {
			t.Fatal("the error shows the token")
		}
	})
}

func FuzzDecodeRunRequest(f *testing.F) {
	f.Add([]byte(`{"profile":"p","code":"return 1","input":{"a":1},"timeout":"5s"}`))
	f.Add([]byte(`{"profile":"p","wasm_base64":"AGFzbQEAAAA="}`))
	f.Add([]byte(`{"profile":"p","code":"1"} {}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRunRequest(b)
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) || re.Status != 400 || re.Reason == "" {
				t.Fatalf("error %v is not a 400 RequestError", err)
			}
			return
		}
		if r.Profile == "" || r.Digest == "" || len(r.Input) == 0 || r.Timeout < 0 {
			t.Fatalf("accepted an incomplete request: %+v", r)
		}
	})
}

func TestRecoverJournal(t *testing.T) {
	dir := t.TempDir()
	audit, jpath := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "audit.jsonl.journal")
	os.WriteFile(audit, []byte(`{"run_id":"done1","status":"ok"}`+"\n"), 0o600)
	os.WriteFile(jpath, []byte(`{"run_id":"done1","client":"a","profile":"p"}`+"\n"+
		`{"run_id":"lost1","client":"a","profile":"p","tool":"t.js"}`+"\n"+
		`{"run_id":"lost1","client":"a","profile":"p","tool":"t.js"}`+"\n"+`{"run_id":"torn`), 0o600)
	f, err := auditlog.Open(audit)
	if err != nil {
		t.Fatal(err)
	}
	n, rep, err := recoverJournal(jpath, audit, f)
	f.Close()
	if err != nil || n != 1 || rep != (lineReport{Corrupt: 1}) {
		t.Fatalf("recovered %d, %+v, %v", n, rep, err)
	}
	b, _ := os.ReadFile(audit)
	if strings.Count(string(b), "\n") != 2 || !strings.Contains(string(b), `"run_id":"lost1"`) || !strings.Contains(string(b), `"status":"interrupted"`) || !strings.Contains(string(b), `"client":"a"`) {
		t.Fatalf("audit file:\n%s", b)
	}
	if j, _ := os.ReadFile(jpath); len(j) != 0 {
		t.Fatalf("journal not emptied: %s", j)
	}
}

func TestSyncFileGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a")
	f, err := auditlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 200)
	for i := range 200 {
		go func() { done <- f.Append([]byte(strings.Repeat("x", i%7) + "\n")) }()
	}
	for range 200 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	if b, _ := os.ReadFile(path); strings.Count(string(b), "\n") != 200 {
		t.Fatalf("%d lines", strings.Count(string(b), "\n"))
	}
}
