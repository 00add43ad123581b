package main

// The end-to-end proof for issue 4: an OpenAPI document goes through plimsoll-specgen, and a tool
// that uses only the generated typed client runs against a real API through plimsoll-run run.
//
// The document (testdata/specgen/petstore.yaml) is hand-written for the pet store served below.
// Its servers[0].url is a fixed stand-in, http://127.0.0.1:8080/v1; each test swaps in the
// httptest server's address before handing the text to specgen, rather than editing base_url in
// the generated profile afterwards. That way the profile is used exactly as generated, and
// base_url (with its /v1 base path) is specgen's reading of the document, so the test covers
// that step too; the file on disk stays a complete, valid document.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/preamble/apigen"
	"github.com/plimsoll/plimsoll/profiles"
)

const (
	specgenSecret     = "sk-specgen-e2e-5b0c2a"
	specgenName       = "e2e-pet-store" // from info.title "E2E Pet Store"
	specgenStandInURL = "http://127.0.0.1:8080/v1"
)

// petAPI is the API the document describes: a small in-memory pet store under /v1 that wants
// "Authorization: Bearer <specgenSecret>" and records every request it receives, before any
// check.
type petAPI struct {
	mu       sync.Mutex
	pets     map[string]pet
	nextID   int
	overload int // answer this many more GET /v1/pets with 503 and Retry-After: 30
	seen     []seenRequest
}

type pet struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Tag  string `json:"tag,omitempty"`
}

// seenRequest is one request as it arrived: the request-target byte for byte, and the headers
// and body that matter here.
type seenRequest struct {
	Method      string
	URI         string
	Auth        string
	ContentType string
	RequestID   string
	Body        string
}

func newPetAPI() *petAPI {
	a := &petAPI{pets: map[string]pet{}}
	for _, p := range []pet{
		{ID: "a b?#é", Name: "Odd", Tag: "odd"},
		{ID: "kit", Name: "Kit", Tag: "c"},
		{ID: "rex", Name: "Rex", Tag: "a"},
		{ID: "tom", Name: "Tom", Tag: "b&c=d"},
		{ID: "zed", Name: "Zed", Tag: "a"},
	} {
		a.pets[p.ID] = p
	}
	return a
}

func (a *petAPI) requests() []seenRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]seenRequest(nil), a.seen...)
}

func (a *petAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = append(a.seen, seenRequest{Method: r.Method, URI: r.RequestURI, Auth: r.Header.Get("Authorization"),
		ContentType: r.Header.Get("Content-Type"), RequestID: r.Header.Get("X-Request-Id"), Body: string(body)})

	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if v != nil {
			json.NewEncoder(w).Encode(v)
		}
	}
	if r.Header.Get("Authorization") != "Bearer "+specgenSecret {
		reply(http.StatusUnauthorized, map[string]string{"error": "bad credential"})
		return
	}
	// Split the escaped path and unescape each segment on its own, so an encoded '/' or '?'
	// stays inside its segment.
	raw, ok := strings.CutPrefix(r.URL.EscapedPath(), "/v1/")
	if !ok {
		reply(http.StatusNotFound, map[string]string{"error": "not under /v1"})
		return
	}
	var segs []string
	for _, s := range strings.Split(raw, "/") {
		u, err := url.PathUnescape(s)
		if err != nil {
			reply(http.StatusBadRequest, map[string]string{"error": "bad escape"})
			return
		}
		segs = append(segs, u)
	}
	route := r.Method + " /" + segs[0]
	if len(segs) == 2 && segs[0] == "pets" {
		route += "/{petId}"
	} else if len(segs) != 1 {
		route = "?"
	}

	switch route {
	case "GET /status":
		reply(http.StatusOK, map[string]bool{"ready": true})
	case "GET /healthz":
		reply(http.StatusOK, map[string]bool{"alive": true})
	case "GET /pets":
		if a.overload > 0 {
			a.overload--
			w.Header().Set("Retry-After", "30")
			reply(http.StatusServiceUnavailable, map[string]string{"error": "overloaded"})
			return
		}
		q := r.URL.Query()
		limit := len(a.pets)
		if s := q.Get("limit"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > 100 {
				reply(http.StatusBadRequest, map[string]string{"error": "limit must be 1..100"})
				return
			}
			limit = n
		}
		tags := map[string]bool{}
		for _, t := range q["tag"] {
			tags[t] = true
		}
		out := []pet{}
		for _, p := range a.pets {
			if len(tags) == 0 || tags[p.Tag] {
				out = append(out, p)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
		reply(http.StatusOK, out[:min(limit, len(out))])
	case "POST /pets":
		var p pet
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if r.Header.Get("Content-Type") != "application/json" || dec.Decode(&p) != nil || p.Name == "" || p.ID != "" {
			reply(http.StatusBadRequest, map[string]string{"error": "want a NewPet as JSON"})
			return
		}
		a.nextID++
		p.ID = "pet-" + strconv.Itoa(a.nextID)
		a.pets[p.ID] = p
		reply(http.StatusCreated, p)
	case "GET /pets/{petId}", "DELETE /pets/{petId}":
		p, ok := a.pets[segs[1]]
		switch {
		case !ok:
			reply(http.StatusNotFound, map[string]string{"error": "no pet " + strconv.Quote(segs[1])})
		case r.Method == http.MethodDelete:
			delete(a.pets, p.ID)
			reply(http.StatusNoContent, nil)
		default:
			reply(http.StatusOK, p)
		}
	default:
		reply(http.StatusNotFound, map[string]string{"error": "no route " + route})
	}
}

// specgenFixture is one generated profile directory and the API it points at.
type specgenFixture struct {
	api     *petAPI
	dir     string
	profile *profiles.Profile
	env     map[string]string
}

// newSpecgenFixture starts the pet store, writes the document with the server's address, runs
// specgen on it as plimsoll-specgen -emit all -o DIR does (Load, then WriteAll under the name
// from info.title) and loads the generated profile.
func newSpecgenFixture(t *testing.T) *specgenFixture {
	t.Helper()
	api := newPetAPI()
	srv := httptest.NewServer(api) // listens on 127.0.0.1
	t.Cleanup(srv.Close)

	doc, err := os.ReadFile(filepath.Join("testdata", "specgen", "petstore.yaml"))
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(doc), specgenStandInURL), "the document names its stand-in server once")
	specPath := writeFile(t, t.TempDir(), "petstore.yaml", strings.Replace(string(doc), specgenStandInURL, srv.URL+"/v1", 1))

	spec, err := apigen.Load(specPath)
	require.NoError(t, err)
	require.Empty(t, spec.Warnings(), "every operation of the document is generated")
	require.Equal(t, specgenName, spec.Name())
	dir := filepath.Join(t.TempDir(), "profiles")
	require.NoError(t, apigen.WriteAll(spec, dir, ""))

	p, err := profiles.Load(dir, specgenName)
	require.NoError(t, err, "the generated profile loads as it is")
	require.Equal(t, srv.URL+"/v1", p.BaseURL.String())
	return &specgenFixture{api: api, dir: dir, profile: p,
		env: map[string]string{p.Credential.Env: specgenSecret}}
}

type specgenRun struct {
	code                 int
	stdout, stderr       string
	traceText, auditText string
	trace                []map[string]any
	audit                map[string]any
}

// run runs TOOL with the generated profile through the CLI, in-process.
func (f *specgenFixture) run(t *testing.T, toolName, js string) specgenRun {
	t.Helper()
	work := t.TempDir()
	tool := writeFile(t, work, toolName, js)
	tracePath, auditPath := filepath.Join(work, "trace.jsonl"), filepath.Join(work, "audit.jsonl")
	code, stdout, stderr := invoke(t, "", f.env, "run", "--profile", specgenName, "--profiles", f.dir,
		"--trace", tracePath, "--audit", auditPath, tool)
	r := specgenRun{code: code, stdout: stdout, stderr: stderr,
		traceText: readFile(t, tracePath), auditText: readFile(t, auditPath),
		trace: readLines(t, tracePath)}
	audits := readLines(t, auditPath)
	require.Len(t, audits, 1, "exactly one audit line")
	r.audit = audits[0]
	assert.Equal(t, specgenName, r.audit["profile"])
	assert.Equal(t, toolName, r.audit["tool"])
	for name, text := range map[string]string{"stdout": stdout, "stderr": stderr, "trace": r.traceText, "audit": r.auditText} {
		assert.NotContains(t, text, specgenSecret, "the credential leaked into %s", name)
	}
	return r
}

// outcomes lists the trace as "METHOD path outcome status".
func (r specgenRun) outcomes() []string {
	var out []string
	for _, e := range r.trace {
		out = append(out, e["method"].(string)+" "+e["path"].(string)+" "+e["outcome"].(string)+" "+strconv.Itoa(int(e["status"].(float64))))
	}
	return out
}

func TestSpecgenEndToEnd(t *testing.T) {
	t.Run("generated files", func(t *testing.T) {
		f := newSpecgenFixture(t)
		files := apigen.FilesFor(specgenName)
		assert.Equal(t, "GET /status\n", readFile(t, filepath.Join(f.dir, files.Health)))
		require.NotNil(t, f.profile.HealthCheck)
		assert.Equal(t, "GET /status", f.profile.HealthCheck.String(), "the tagged route, not the untagged /healthz")
		profileText := readFile(t, filepath.Join(f.dir, files.Profile))
		assert.Contains(t, profileText, "\nhealth_check: GET /status\n")
		assert.Contains(t, profileText, "\npreamble: "+files.Preamble+"\n")
		assert.Equal(t, filepath.Join(f.dir, files.Preamble), f.profile.Preamble)
		assert.Equal(t, profiles.Credential{Header: "Authorization", Scheme: "Bearer", Env: "E2E_PET_STORE_TOKEN"}, f.profile.Credential)
		var routes []string
		for _, r := range f.profile.Routes {
			routes = append(routes, r.String())
		}
		assert.Equal(t, []string{"GET /healthz", "GET /pets", "POST /pets", "GET /pets/*", "DELETE /pets/*", "GET /status"}, routes)
		assert.Equal(t, strings.Join(routes, "\n")+"\n", readFile(t, filepath.Join(f.dir, files.Routes)))
		desc := readFile(t, filepath.Join(f.dir, files.Description))
		for _, fn := range []string{"listPets({limit?:int,tag?:string[]}):Pet[]", "createPet({body:NewPet}):Pet", "getPet({petId:string,", "deletePet({petId:string})"} {
			assert.Contains(t, desc, "\n"+fn, "the description shows the generated function")
		}
		for _, file := range []string{files.Routes, files.Preamble, files.Description, files.Health, files.Profile} {
			assert.NotContains(t, readFile(t, filepath.Join(f.dir, file)), specgenSecret)
		}
		assert.Empty(t, f.api.requests(), "generating touches no API")
	})

	t.Run("typed client against the API", func(t *testing.T) {
		f := newSpecgenFixture(t)
		r := f.run(t, "pets.js", `
const fns = ["listPets", "getPet", "createPet", "deletePet", "getStatus", "getHealthz"].filter((n) => typeof api[n] !== "function");
if (fns.length > 0) throw new Error("not generated: " + fns.join(", "));
const list = await api.listPets({limit: 2, tag: ["a", "b&c=d"]});
const odd = await api.getPet({petId: "a b?#é", "X-Request-Id": "req-1"});
const made = await api.createPet({body: {name: "Nemo", tag: "fish"}});
const id = made.json().id;
const got = await api.getPet({petId: id});
const del = await api.deletePet({petId: id});
const gone = await api.getPet({petId: id});
console.log("created", id);
return {
  list: [list.status, list.json()],
  odd: [odd.status, odd.json()],
  made: [made.status, made.json()],
  got: [got.status, got.json()],
  del: [del.status, del.body],
  gone: [gone.status, gone.ok, gone.json()],
};
`)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stderr, "created pet-1")
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), "stdout carries only the output: %q", r.stdout)
		want := map[string]any{}
		require.NoError(t, json.Unmarshal([]byte(`{
  "list": [200, [{"id": "rex", "name": "Rex", "tag": "a"}, {"id": "tom", "name": "Tom", "tag": "b&c=d"}]],
  "odd":  [200, {"id": "a b?#é", "name": "Odd", "tag": "odd"}],
  "made": [201, {"id": "pet-1", "name": "Nemo", "tag": "fish"}],
  "got":  [200, {"id": "pet-1", "name": "Nemo", "tag": "fish"}],
  "del":  [204, ""],
  "gone": [404, false, {"error": "no pet \"pet-1\""}]
}`), &want))
		assert.Equal(t, want, out)

		// What the API received, byte for byte: the hostile id percent-encoded inside its one
		// segment, the array query parameter repeated, the header parameter and the JSON body,
		// and the credential that the tool never held.
		auth := "Bearer " + specgenSecret
		assert.Equal(t, []seenRequest{
			{Method: "GET", URI: "/v1/pets?limit=2&tag=a&tag=b%26c%3Dd", Auth: auth},
			{Method: "GET", URI: "/v1/pets/a%20b%3F%23%C3%A9", Auth: auth, RequestID: "req-1"},
			{Method: "POST", URI: "/v1/pets", Auth: auth, ContentType: "application/json", Body: `{"name":"Nemo","tag":"fish"}`},
			{Method: "GET", URI: "/v1/pets/pet-1", Auth: auth},
			{Method: "DELETE", URI: "/v1/pets/pet-1", Auth: auth},
			{Method: "GET", URI: "/v1/pets/pet-1", Auth: auth},
		}, f.api.requests())

		assert.Equal(t, []string{
			"GET /pets forwarded 200",
			"GET /pets/a%20b%3F%23%C3%A9 forwarded 200",
			"POST /pets forwarded 201",
			"GET /pets/pet-1 forwarded 200",
			"DELETE /pets/pet-1 forwarded 204",
			"GET /pets/pet-1 forwarded 404",
		}, r.outcomes())
		var routes []string
		for _, e := range r.trace {
			routes = append(routes, e["route"].(string))
		}
		assert.Equal(t, []string{"GET /pets", "GET /pets/*", "POST /pets", "GET /pets/*", "DELETE /pets/*", "GET /pets/*"}, routes)

		a := r.audit
		assert.Equal(t, "ok", a["status"])
		assert.EqualValues(t, 6, a["host_calls"])
		assert.EqualValues(t, 6, a["host_calls_forwarded"])
		for _, k := range []string{"host_calls_shed", "host_calls_denied", "host_calls_over_budget", "host_calls_invalid", "host_calls_failed", "probes", "breaker_opens"} {
			assert.EqualValues(t, 0, a[k], k)
		}
		assert.EqualValues(t, profiles.DefaultBudgetCalls, a["budget_calls"])
	})

	t.Run("hostile path values fail before any call", func(t *testing.T) {
		f := newSpecgenFixture(t)
		r := f.run(t, "hostile.js", `
const out = [];
for (const v of ["..", ".", "a/b", "a\\b", "50%", "%2e%2e", ""]) {
  for (const fn of ["getPet", "deletePet"]) {
    let p;
    try {
      p = api[fn]({petId: v});
    } catch (e) {
      out.push(fn + " " + JSON.stringify(v) + " threw synchronously: " + e.message);
      continue;
    }
    try {
      const res = await p;
      out.push(fn + " " + JSON.stringify(v) + " was sent: " + res.status);
    } catch (e) {
      out.push(e.message);
    }
  }
}
return out;
`)
		require.Equal(t, 0, r.code, r.stderr)
		var out []string
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
		dots := `must not be "." or ".."`
		sep := `must not contain "/", "\" or "%"`
		var want []string
		for _, c := range []struct{ why string }{{dots}, {dots}, {sep}, {sep}, {sep}, {sep}, {"must not be empty"}} {
			for _, fn := range []string{"getPet", "deletePet"} {
				want = append(want, fn+`: path parameter "petId" `+c.why)
			}
		}
		assert.Equal(t, want, out, "each call rejects its Promise naming the parameter")
		assert.Empty(t, f.api.requests(), "the API received nothing")
		assert.Empty(t, r.trace, "no call reached the broker")
		assert.Equal(t, "ok", r.audit["status"])
		assert.EqualValues(t, 0, r.audit["host_calls"])
	})

	t.Run("hand-written traversal is refused by the broker", func(t *testing.T) {
		f := newSpecgenFixture(t)
		r := f.run(t, "raw.js", `
const out = [];
for (const p of ["/pets/..%2f", "/pets/..", "/pets/a%2Fb", "/pets/50%25", "/pets/%2e%2e", "/pets/a\\b"]) {
  const res = await api.get(p);
  out.push([res.status, res.outcome]);
}
const del = await api.delete("/pets/rex/..");
out.push([del.status, del.outcome]);
return out;
`)
		require.Equal(t, 0, r.code, r.stderr)
		var out [][]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
		for i, o := range out {
			assert.Equal(t, []any{400.0, "invalid"}, o, "call %d", i)
		}
		assert.Len(t, out, 7)
		assert.Empty(t, f.api.requests(), "nothing reached the API")
		assert.Equal(t, []string{
			"GET /pets/..%2f invalid 400",
			"GET /pets/.. invalid 400",
			"GET /pets/a%2Fb invalid 400",
			"GET /pets/50%25 invalid 400",
			"GET /pets/%2e%2e invalid 400",
			`GET /pets/a\\b invalid 400`, // a refused path is written to the trace Go-quoted
			"DELETE /pets/rex/.. invalid 400",
		}, r.outcomes())
		assert.Equal(t, "ok", r.audit["status"])
		assert.EqualValues(t, 7, r.audit["host_calls"])
		assert.EqualValues(t, 7, r.audit["host_calls_invalid"])
		assert.EqualValues(t, 0, r.audit["host_calls_forwarded"])
	})

	// The broker probes the generated health_check, GET /status, while it sheds, and never the
	// untagged /healthz. This needs one probe interval (1 s) of waiting.
	t.Run("broker probes the tagged health route", func(t *testing.T) {
		f := newSpecgenFixture(t)
		f.api.overload = 1
		r := f.run(t, "probe.js", `
const first = await api.listPets({limit: 1});
const shed = await api.listPets({limit: 1});
await sleep(1100);
const after = await api.listPets({limit: 1});
return [first.status, shed.status, shed.outcome, after.status, after.json()];
`)
		require.Equal(t, 0, r.code, r.stderr)
		assert.JSONEq(t, `[503, 503, "shed", 200, [{"id": "a b?#é", "name": "Odd", "tag": "odd"}]]`, r.stdout)
		auth := "Bearer " + specgenSecret
		assert.Equal(t, []seenRequest{
			{Method: "GET", URI: "/v1/pets?limit=1", Auth: auth},
			{Method: "GET", URI: "/v1/status", Auth: auth},
			{Method: "GET", URI: "/v1/pets?limit=1", Auth: auth},
		}, f.api.requests())
		assert.Equal(t, []string{"GET /pets forwarded 503", "GET /pets shed 503", "GET /pets forwarded 200"}, r.outcomes())
		require.Len(t, r.trace, 3)
		assert.Equal(t, "ok", r.trace[2]["probe"])
		assert.EqualValues(t, 1, r.audit["probes"])
		assert.EqualValues(t, 1, r.audit["probes_ok"])
		assert.EqualValues(t, 1, r.audit["breaker_opens"])
		assert.EqualValues(t, 1, r.audit["host_calls_shed"])
		assert.EqualValues(t, 2, r.audit["host_calls_forwarded"])
	})
}
