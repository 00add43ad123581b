package conformance

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/plimsoll/plimsoll/host"
)

// observation is one entry of a driver's output (preamble/README.md).
type observation struct {
	Op         string              `json:"op"`
	Status     *int                `json:"status"`
	OK         *bool               `json:"ok"`
	Outcome    *string             `json:"outcome"`
	Headers    map[string][]string `json:"headers"`
	Body       *string             `json:"body"`
	BodyBase64 *string             `json:"body_base64"`
	BodyLatin1 *string             `json:"body_latin1"`
	RetryAfter *float64            `json:"retry_after"`
	Error      *string             `json:"error"`
	// Observations are a concurrent operation's, one per call in the order listed.
	Observations []observation `json:"observations"`
}

type driverOutput struct {
	Observations []observation `json:"observations"`
}

func parseOutput(out []byte) (driverOutput, error) {
	var o driverOutput
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return o, err
	}
	if dec.More() {
		return o, fmt.Errorf("data after the JSON object")
	}
	if o.Observations == nil {
		return o, fmt.Errorf(`no "observations" list`)
	}
	return o, nil
}

// differ collects differences in check order.
type differ struct {
	diffs  []string
	secret string
}

func (d *differ) add(format string, args ...any) {
	d.diffs = append(d.diffs, redact(fmt.Sprintf(format, args...), d.secret))
}

func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "<token>")
}

// compare checks a run against its scenario: the run itself, the observations, the trace, what the
// upstream received, and the audit counters, in that order.
func compare(s *Scenario, run host.Result, got []received, secret string) []string {
	d := &differ{secret: secret}
	if run.Err != nil {
		d.add("the driver failed: %v", run.Err)
		return d.diffs
	}
	if bytes.Contains(run.Output, []byte(secret)) || bytes.Contains(run.Log, []byte(secret)) {
		d.add("the credential reached the guest: the driver's output or log contains it")
	}
	out, err := parseOutput(run.Output)
	if err != nil {
		d.add("the driver's output is not {\"observations\": [...]}: %v (output starts %s)", err, snippet(run.Output, 0))
		return d.diffs
	}
	d.observations(s, out.Observations)
	d.trace(s, run)
	d.received(s, got)
	d.audit(s, run)
	return d.diffs
}

func (d *differ) observations(s *Scenario, obs []observation) {
	if len(obs) != len(s.Operations) {
		d.add("observations: expected %d (one per operation), observed %d", len(s.Operations), len(obs))
	}
	for i, op := range s.Operations {
		if i >= len(obs) {
			break
		}
		o := obs[i]
		switch {
		case op.Call != nil:
			d.callObservation(fmt.Sprintf("operations[%d]", i), op.Call, o)
		case op.Concurrent != nil:
			d.concurrentObservation(fmt.Sprintf("operations[%d]", i), op.Concurrent, o)
		case o.Op != "sleep":
			d.add("operations[%d] (sleep): expected a sleep observation, observed op %q", i, o.Op)
		}
	}
}

func (d *differ) concurrentObservation(at string, calls []*Call, o observation) {
	if o.Op != "concurrent" {
		d.add("%s (concurrent): expected a concurrent observation, observed op %q", at, o.Op)
		return
	}
	if len(o.Observations) != len(calls) {
		d.add("%s (concurrent): expected %d observations (one per call), observed %d", at, len(calls), len(o.Observations))
		return
	}
	for j, c := range calls {
		d.callObservation(fmt.Sprintf("%s.concurrent[%d]", at, j), c, o.Observations[j])
	}
}

func (d *differ) callObservation(at string, c *Call, o observation) {
	label := fmt.Sprintf("%s (%s %s)", at, c.Method, c.Path)
	switch {
	case o.Op != "call":
		d.add("%s: expected a call observation, observed op %q", label, o.Op)
	case o.Error != nil:
		d.add("%s: the preamble raised an error instead of answering: %s", label, *o.Error)
	default:
		d.call(label, c, o)
	}
}

func (d *differ) call(label string, c *Call, o observation) {
	e := c.Expect
	if o.Status == nil {
		d.add("%s: status: expected %d, observed none", label, e.Status)
	} else if *o.Status != e.Status {
		d.add("%s: status: expected %d, observed %d", label, e.Status, *o.Status)
	}
	if o.Outcome == nil {
		d.add("%s: outcome: expected %q, observed none", label, e.Outcome)
	} else if *o.Outcome != e.Outcome {
		d.add("%s: outcome: expected %q, observed %q", label, e.Outcome, *o.Outcome)
	}
	if o.OK == nil {
		d.add("%s: ok: expected %t, observed none", label, e.OK)
	} else if *o.OK != e.OK {
		d.add("%s: ok: expected %t, observed %t", label, e.OK, *o.OK)
	}
	h := http.Header{}
	for name, vs := range o.Headers {
		k := http.CanonicalHeaderKey(name)
		h[k] = append(h[k], vs...)
	}
	for _, m := range e.Headers {
		if msg := matchHeader(m, h[m.Name]); msg != "" {
			d.add("%s: header %s: %s", label, m.Name, msg)
		}
	}
	if o.RetryAfter != nil {
		want, err := strconv.Atoi(h.Get("Retry-After"))
		if err != nil || float64(want) != *o.RetryAfter {
			d.add("%s: retry_after: the preamble reports %gs, but Retry-After is %s", label, *o.RetryAfter, quoteList(h["Retry-After"]))
		}
	}
	body, err := observedBody(o, c.Read)
	switch {
	case err != nil:
		d.add("%s: body: %v", label, err)
	case e.Body != nil:
		if msg := matchBody(e.Body, body); msg != "" {
			d.add("%s: body: %s", label, msg)
		}
	}
}

func observedBody(o observation, read string) ([]byte, error) {
	n := 0
	for _, p := range []*string{o.Body, o.BodyBase64, o.BodyLatin1} {
		if p != nil {
			n++
		}
	}
	switch {
	case n > 1:
		return nil, fmt.Errorf("the observation has more than one of body, body_base64 and body_latin1")
	case o.BodyBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*o.BodyBase64)
		if err != nil {
			return nil, fmt.Errorf("body_base64 is not standard base64: %v", err)
		}
		return b, nil
	case o.BodyLatin1 != nil:
		b := make([]byte, 0, len(*o.BodyLatin1))
		for i, r := range *o.BodyLatin1 {
			if r > 0xff {
				return nil, fmt.Errorf("body_latin1 has U+%04X at byte %d; every character must be U+0000–U+00FF, one per byte", r, i)
			}
			b = append(b, byte(r))
		}
		return b, nil
	case o.Body != nil:
		if read == "bytes" {
			return nil, fmt.Errorf("read: bytes asks for body_base64 or body_latin1, observed a text body %s", snippet([]byte(*o.Body), 0))
		}
		return []byte(*o.Body), nil
	}
	return nil, fmt.Errorf("the observation has no body, body_base64 or body_latin1")
}

// matchHeader says how values fail m, or "".
func matchHeader(m HeaderMatch, vals []string) string {
	switch {
	case m.Absent:
		if len(vals) > 0 {
			return "expected absent, observed " + quoteList(vals)
		}
	case m.Present:
		if len(vals) == 0 {
			return "expected present, observed absent"
		}
	case m.Between != nil:
		lo, hi := m.Between[0], m.Between[1]
		n, err := 0, error(nil)
		if len(vals) == 1 {
			n, err = strconv.Atoi(vals[0])
		}
		if len(vals) != 1 || err != nil || n < lo || n > hi {
			return fmt.Sprintf("expected one whole number from %d to %d, observed %s", lo, hi, quoteList(vals))
		}
	case m.Contains != "":
		if len(vals) != 1 || !strings.Contains(vals[0], m.Contains) {
			return fmt.Sprintf("expected one value containing %q, observed %s", m.Contains, quoteList(vals))
		}
	default:
		if !slices.Equal(m.Values, vals) {
			return fmt.Sprintf("expected %s, observed %s", quoteList(m.Values), quoteList(vals))
		}
	}
	return ""
}

func quoteList(vals []string) string {
	if len(vals) == 0 {
		return "absent"
	}
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = strconv.Quote(v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// matchBody says how got fails want, or "".
func matchBody(want *Body, got []byte) string {
	switch want.Kind {
	case "json", "json_contains":
		var v any
		if err := json.Unmarshal(got, &v); err != nil {
			return fmt.Sprintf("expected JSON %s, observed %d bytes that are not JSON: %s", jsonSnippet(want.JSONText), len(got), snippet(got, 0))
		}
		if want.Kind == "json" && !reflect.DeepEqual(v, want.JSON) {
			return fmt.Sprintf("expected JSON %s, observed %s", jsonSnippet(want.JSONText), jsonSnippet(got))
		}
		if want.Kind == "json_contains" {
			if where := jsonContains(v, want.JSON, "$"); where != "" {
				return fmt.Sprintf("expected JSON containing %s, observed %s (%s)", jsonSnippet(want.JSONText), jsonSnippet(got), where)
			}
		}
		return ""
	}
	exp := want.Content()
	if bytes.Equal(exp, got) {
		return ""
	}
	at := 0
	for at < len(exp) && at < len(got) && exp[at] == got[at] {
		at++
	}
	if len(exp) <= 64 && len(got) <= 64 {
		return fmt.Sprintf("expected %s, observed %s", snippet(exp, 0), snippet(got, 0))
	}
	return fmt.Sprintf("expected %d bytes, observed %d; they differ from byte %d: expected %s, observed %s",
		len(exp), len(got), at, snippet(exp, at), snippet(got, at))
}

// jsonContains reports where got lacks want: objects need want's keys (recursively), anything
// else must be equal. It returns "" when got contains want.
func jsonContains(got, want any, at string) string {
	wm, ok := want.(map[string]any)
	if !ok {
		if reflect.DeepEqual(got, want) {
			return ""
		}
		return at + " differs"
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return at + " is not an object"
	}
	keys := make([]string, 0, len(wm))
	for k := range wm {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		gv, ok := gm[k]
		if !ok {
			return at + "." + k + " is missing"
		}
		if where := jsonContains(gv, wm[k], at+"."+k); where != "" {
			return where
		}
	}
	return ""
}

// jsonSnippet shows valid JSON compacted and unquoted, cut at 120 bytes.
func jsonSnippet(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return snippet(b, 0)
	}
	s := buf.String()
	if len(s) > 120 {
		cut := 120
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// snippet shows up to 48 bytes of b from about at, quoted; "…" marks a cut.
func snippet(b []byte, at int) string {
	const width = 48
	from := max(0, min(at-8, len(b)-width))
	to := min(len(b), from+width)
	for from > 0 && !utf8.RuneStart(b[from]) {
		from--
	}
	for to < len(b) && !utf8.RuneStart(b[to]) {
		to++
	}
	s := strconv.Quote(string(b[from:to]))
	if from > 0 {
		s = "…" + s
	}
	if to < len(b) {
		s += "…"
	}
	return s
}

func (d *differ) trace(s *Scenario, run host.Result) {
	tr := run.Trace
	if len(tr) != len(s.Trace) {
		got := make([]string, len(tr))
		for i, t := range tr {
			got[i] = string(t.Outcome)
		}
		d.add("trace: expected %d entries, observed %d: [%s]", len(s.Trace), len(tr), strings.Join(got, ", "))
	}
	for i, want := range s.Trace {
		if i >= len(tr) {
			break
		}
		got := tr[i]
		label := fmt.Sprintf("trace[%d] (%s %s)", i, got.Method, got.Path)
		if string(got.Outcome) != want.Outcome {
			d.add("%s: outcome: expected %q, observed %q (reason %q)", label, want.Outcome, got.Outcome, got.Reason)
		}
		if want.Status != 0 && got.Status != want.Status {
			d.add("%s: status: expected %d, observed %d", label, want.Status, got.Status)
		}
		if want.UpstreamStatus != 0 && got.UpstreamStatus != want.UpstreamStatus {
			d.add("%s: upstream_status: expected %d, observed %d", label, want.UpstreamStatus, got.UpstreamStatus)
		}
		if want.Route != "" && got.Route != want.Route {
			d.add("%s: route: expected %q, observed %q", label, want.Route, got.Route)
		}
		if want.Probe != "" && got.Probe != want.Probe {
			d.add("%s: probe: expected %q, observed %q", label, want.Probe, got.Probe)
		}
		if want.ReasonContains != "" && !strings.Contains(got.Reason, want.ReasonContains) {
			d.add("%s: reason: expected it to contain %q, observed %q", label, want.ReasonContains, got.Reason)
		}
		if ms := float64(want.MinLatency.Microseconds()) / 1000; ms > 0 && got.LatencyMs < ms {
			d.add("%s: latency_ms: expected at least %g, observed %g", label, ms, got.LatencyMs)
		}
	}
}

func (d *differ) received(s *Scenario, got []received) {
	if s.ABI() >= 2 {
		// Concurrent calls reach the upstream in any order: compare as sets, in a fixed order.
		want := slices.Clone(s.Received)
		slices.SortStableFunc(want, func(a, b ReceivedExpect) int {
			return strings.Compare(a.Method+" "+basePath+a.Path, b.Method+" "+basePath+b.Path)
		})
		got = slices.Clone(got)
		slices.SortStableFunc(got, func(a, b received) int {
			pa, _, _ := strings.Cut(a.RequestURI, "?")
			pb, _, _ := strings.Cut(b.RequestURI, "?")
			return strings.Compare(a.Method+" "+pa, b.Method+" "+pb)
		})
		s = &Scenario{Received: want}
	}
	for i, want := range s.Received {
		if i >= len(got) {
			break
		}
		d.request(i, want, got[i])
	}
	switch {
	case len(got) > len(s.Received):
		var extra []string
		for _, g := range got[len(s.Received):] {
			extra = append(extra, g.Method+" "+g.RequestURI)
		}
		d.add("received: expected %d requests, observed %d; the upstream also received: %s", len(s.Received), len(got), strings.Join(extra, ", "))
	case len(got) < len(s.Received):
		var missing []string
		for _, w := range s.Received[len(got):] {
			missing = append(missing, w.Method+" "+basePath+w.Path)
		}
		d.add("received: expected %d requests, observed %d; never received: %s", len(s.Received), len(got), strings.Join(missing, ", "))
	}
}

func (d *differ) request(i int, want ReceivedExpect, got received) {
	label := fmt.Sprintf("received[%d] (%s %s)", i, want.Method, want.Path)
	gotPath, gotQuery, _ := strings.Cut(got.RequestURI, "?")
	if got.Method != want.Method || gotPath != basePath+want.Path {
		d.add("%s: expected %s %s, observed %s %s", label, want.Method, basePath+want.Path, got.Method, gotPath)
		return
	}
	switch {
	case want.RawQuery != nil:
		if gotQuery != *want.RawQuery {
			d.add("%s: raw query: expected %q, observed %q", label, *want.RawQuery, gotQuery)
		}
	case want.Query != nil:
		d.query(label, want.Query, gotQuery)
	case gotQuery != "":
		d.add("%s: query: expected none, observed %q", label, gotQuery)
	}
	if auth := got.Header.Values("Authorization"); len(auth) != 1 || auth[0] != "Bearer "+d.secret {
		d.add("%s: credential: expected Authorization [\"Bearer <token>\"], observed %s", label, quoteList(auth))
	}
	for _, m := range want.Headers {
		if msg := matchHeader(m, got.Header.Values(m.Name)); msg != "" {
			d.add("%s: header %s: %s", label, m.Name, msg)
		}
	}
	if want.Body == nil {
		if len(got.Body) > 0 {
			d.add("%s: body: expected none, observed %d bytes %s", label, len(got.Body), snippet(got.Body, 0))
		}
	} else if msg := matchBody(want.Body, got.Body); msg != "" {
		d.add("%s: body: %s", label, msg)
	}
}

// query compares a received query with the expected parameters: names in any order, values of a
// name in order.
func (d *differ) query(label string, want *Query, raw string) {
	got, err := url.ParseQuery(raw)
	if err != nil {
		d.add("%s: query: %q does not parse: %v", label, raw, err)
		return
	}
	seen := map[string]bool{}
	for _, p := range want.Params {
		seen[p.Name] = true
		if !slices.Equal(got[p.Name], p.Values) {
			d.add("%s: query %s: expected %s, observed %s (raw query %q)", label, p.Name, quoteList(p.Values), quoteList(got[p.Name]), raw)
		}
	}
	var extra []string
	for name := range got {
		if !seen[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		d.add("%s: query %s: expected absent, observed %s (raw query %q)", label, name, quoteList(got[name]), raw)
	}
}

func (d *differ) audit(s *Scenario, run host.Result) {
	if len(s.Audit) == 0 {
		return
	}
	raw, _ := json.Marshal(run.Audit)
	var counters map[string]any
	_ = json.Unmarshal(raw, &counters)
	for _, a := range s.Audit {
		v, ok := counters[a.Key].(float64)
		switch {
		case !ok:
			d.add("audit: %s: no such counter on the audit line", a.Key)
		case int(v) != a.Value:
			d.add("audit: %s: expected %d, observed %d", a.Key, a.Value, int(v))
		}
	}
}
