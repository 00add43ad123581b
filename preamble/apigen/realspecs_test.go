package apigen

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// realSpecsDir is ../shared/realspecs relative to the module root: published OpenAPI documents
// (GitHub's, Stripe's) with their sources and licences in its README.
const realSpecsDir = "../../../shared/realspecs"

var realFiles = map[string]string{"github": "github-api.github.com.json.gz", "stripe": "stripe-spec3.json.gz"}

// readRealSpec returns one real document, gunzipped, or skips the test saying why.
func readRealSpec(tb testing.TB, name string) []byte {
	tb.Helper()
	f, err := os.Open(filepath.Join(realSpecsDir, realFiles[name]))
	if err != nil {
		tb.Skipf("real OpenAPI documents not available (%v): they live in ../shared/realspecs relative to the module root", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(tb, err)
	data, err := io.ReadAll(zr)
	require.NoError(tb, err)
	return data
}

// BenchmarkSpecgenReal is specgen on a real document: parse, check, and every output.
func BenchmarkSpecgenReal(b *testing.B) {
	for _, name := range []string{"github", "stripe"} {
		b.Run(name, func(b *testing.B) {
			data := readRealSpec(b, name)
			b.ResetTimer()
			for range b.N {
				s, err := Loader{}.Parse(data, realFiles[name])
				require.NoError(b, err)
				_, err = s.Preamble()
				require.NoError(b, err)
				_ = s.Description()
				_, err = s.Profile(ProfileOptions{Name: name, Preamble: name + ".preamble.js"})
				require.NoError(b, err)
			}
		})
	}
}

// realVM loads a real document's generated preamble into goja over the fake generic preamble.
func realVM(t *testing.T, name string) (*Spec, *jsVM) {
	t.Helper()
	s := realParsed(t, name)
	pre, err := s.Preamble()
	require.NoError(t, err)
	return s, loadPreamble(t, pre)
}

var realCache sync.Map // name → *Spec

// realParsed parses a real document once per test binary.
func realParsed(t testing.TB, name string) *Spec {
	t.Helper()
	if s, ok := realCache.Load(name); ok {
		return s.(*Spec)
	}
	s, err := Loader{}.Parse(readRealSpec(t, name), realFiles[name])
	require.NoError(t, err)
	realCache.Store(name, s)
	return s
}

// searchTable is what a model would type to find an operation, and the operation it wants.
var searchTable = map[string][]struct{ query, want string }{
	"github": {
		{"create an issue", "issuesCreate"},
		{"list pull requests", "pullsList"},
		{"get a repository", "reposGet"},
		{"star a repository", "activityStarRepoForAuthenticatedUser"},
		{"list commits", "reposListCommits"},
		{"create a gist", "gistsCreate"},
		{"add labels to an issue", "issuesAddLabels"},
		{"merge a pull request", "pullsMerge"},
		{"list workflow runs for a repository", "actionsListWorkflowRunsForRepo"},
		{"get the authenticated user", "usersGetAuthenticated"},
		{"search code", "searchCode"},
		{"create a release", "reposCreateRelease"},
		{"list organization members", "orgsListMembers"},
		{"create a comment on an issue", "issuesCreateComment"},
		{"delete a repository", "reposDelete"},
		{"list my repositories", "reposListForAuthenticatedUser"},
		{"reposGetContent", "reposGetContent"}, // a name finds itself
	},
	"stripe": {
		{"create a customer", "PostCustomers"},
		{"refund a charge", "PostChargesChargeRefund"},
		{"list invoices", "GetInvoices"},
		{"cancel a subscription", "DeleteSubscriptionsSubscriptionExposedId"},
		{"create a payment intent", "PostPaymentIntents"},
		{"retrieve a customer", "GetCustomersCustomer"},
		{"update a product", "PostProductsId"},
		{"delete a customer", "DeleteCustomersCustomer"},
	},
}

type searchAnswer struct {
	Results []struct{ Fn, Http, Summary, Sig string }
	Types   map[string]string
}

// TestRealSearch: api.search on GitHub's and Stripe's generated clients finds the operation a
// query means in its first three results, in at most SearchMaxTokens.
func TestRealSearch(t *testing.T) {
	for _, name := range []string{"github", "stripe"} {
		t.Run(name, func(t *testing.T) {
			_, js := realVM(t, name)
			most, total, first := 0, 0, 0
			defer func() {
				t.Logf("%s: %d queries, right operation in the first 3 for all (first for %d); answers %d tokens at most, %d on average",
					name, len(searchTable[name]), first, most, total/len(searchTable[name]))
			}()
			for _, c := range searchTable[name] {
				out := js.eval(`JSON.stringify(api.search(` + JSString(c.query) + `))`)
				var a searchAnswer
				require.NoError(t, json.Unmarshal([]byte(out), &a))
				var fns []string
				for _, r := range a.Results {
					fns = append(fns, r.Fn)
				}
				require.NotEmpty(t, fns, c.query)
				require.Contains(t, fns[:min(3, len(fns))], c.want, "%q: %v", c.query, fns)
				require.LessOrEqual(t, Tokens(out), SearchMaxTokens, "%q", c.query)
				most, total = max(most, Tokens(out)), total+Tokens(out)
				if fns[0] == c.want {
					first++
				}
			}
		})
	}
}

// TestRealDescribe: api.describe gives one operation with every type it uses.
func TestRealDescribe(t *testing.T) {
	_, js := realVM(t, "github")
	out := js.eval(`JSON.stringify(api.describe("issuesCreate"))`)
	var d struct {
		Fn, Http, Summary, Doc, Sig string
		Types                       map[string]string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	require.Equal(t, "issuesCreate", d.Fn)
	require.Equal(t, "POST /repos/{owner}/{repo}/issues", d.Http)
	require.Equal(t, "Create an issue", d.Summary)
	require.True(t, strings.HasPrefix(d.Sig, "issuesCreate({owner:string,repo:string,body:{"), d.Sig)
	require.Contains(t, d.Sig, "title:")
	require.Contains(t, d.Types, "issue", "the result type is defined")
	require.Contains(t, js.eval(`(function () { try { api.describe("issuesCreat"); } catch (e) { return e.message; } })()`),
		`api.describe: no function "issuesCreat" (did you mean`)
}

// TestRealDescriptions: past the threshold the description is an index within IndexMaxTokens,
// and the index says how to search.
func TestRealDescriptions(t *testing.T) {
	for _, name := range []string{"github", "stripe"} {
		t.Run(name, func(t *testing.T) {
			s := realParsed(t, name)
			require.Equal(t, name, s.Name())
			d := s.Description()
			require.LessOrEqual(t, Tokens(d), IndexMaxTokens, d)
			require.Greater(t, Tokens(s.Listing()), FullListingMaxTokens, "too big to list")
			require.Contains(t, d, "api.search(")
			require.Contains(t, d, "api.describe(")
			require.NotContains(t, d, "<p>")
			for _, op := range s.Ops {
				require.False(t, (op.Method == "GET" || op.Method == "HEAD") && op.Body != nil, "%s %s takes a body", op.Method, op.Path)
			}
			t.Logf("%s: %d operations, description %d tokens, full listing %d tokens (%.1f per operation)",
				name, len(s.Ops), Tokens(d), Tokens(s.Listing()), float64(Tokens(s.Listing()))/float64(len(s.Ops)))
		})
	}
}

// BenchmarkRealDescription reports the tool description's size for each real document.
func BenchmarkRealDescription(b *testing.B) {
	for _, name := range []string{"github", "stripe"} {
		b.Run(name, func(b *testing.B) {
			s := realParsed(b, name)
			var d string
			for b.Loop() {
				d = s.Description()
			}
			b.ReportMetric(float64(Tokens(d)), "tokens")
			b.ReportMetric(float64(Tokens(s.Listing()))/float64(len(s.Ops)), "listing-tokens/op")
		})
	}
}

// BenchmarkRealSearch is one api.search over each real client's index (native goja, so the time
// is a lower bound for the sandbox), with the answer's size.
func BenchmarkRealSearch(b *testing.B) {
	for _, name := range []string{"github", "stripe"} {
		b.Run(name, func(b *testing.B) {
			s := realParsed(b, name)
			pre, err := s.Preamble()
			require.NoError(b, err)
			js := loadPreamble(b, pre)
			most := 0
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				c := searchTable[name][i%len(searchTable[name])]
				v, err := js.vm.RunString(`JSON.stringify(api.search(` + JSString(c.query) + `))`)
				require.NoError(b, err)
				most = max(most, Tokens(v.String()))
			}
			b.ReportMetric(float64(most), "max-answer-tokens")
		})
	}
}
