package apigen

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func doc(paths string) []byte {
	return []byte("openapi: 3.0.3\ninfo: {title: T, version: '1'}\nservers: [{url: 'https://api.acme.test'}]\npaths:\n" + paths)
}

// Templated paths that differ only in parameter names are one route pattern: kept, with a
// warning, while their methods differ; refused, naming both, when one method is declared twice.
func TestConflictingPaths(t *testing.T) {
	s, err := Parse(doc(`  /orgs/{org}/att/{digest}:
    get: {operationId: listAtt, parameters: [{name: org, in: path, required: true, schema: {type: string}}, {name: digest, in: path, required: true, schema: {type: string}}], responses: {'200': {description: ok}}}
  /orgs/{org}/att/{id}:
    delete: {operationId: deleteAtt, parameters: [{name: org, in: path, required: true, schema: {type: string}}, {name: id, in: path, required: true, schema: {type: integer}}], responses: {'204': {description: gone}}}
`))
	require.NoError(t, err)
	require.Equal(t, []string{"GET /orgs/*/att/*", "DELETE /orgs/*/att/*"}, s.Routes())
	require.Contains(t, strings.Join(s.Warnings(), "\n"), `differ only in parameter names (a strict OpenAPI rule); kept, as their methods do not collide`)

	_, err = Parse(doc(`  /a/{x}:
    get: {parameters: [{name: x, in: path, required: true, schema: {type: string}}], responses: {'200': {description: ok}}}
  /a/{y}:
    get: {parameters: [{name: y, in: path, required: true, schema: {type: string}}], responses: {'200': {description: ok}}}
`))
	require.ErrorIs(t, err, ErrInvalidDocument)
	var ae *AmbiguousError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, "specgen: 1 operation(s) are declared twice: the same METHOD and path template up to parameter names, which neither the grant nor the client can tell apart: GET /a/{x} and GET /a/{y} are one call", err.Error())

	// A path item kin-openapi skips after the conflict is still validated.
	_, err = Parse(doc(`  /b/{x}:
    get: {parameters: [{name: x, in: path, required: true, schema: {type: string}}], responses: {'200': {description: ok}}}
  /b/{y}:
    delete: {parameters: [{name: y, in: path, required: true, schema: {type: string}}], responses: {'204': {}}}
`))
	require.ErrorIs(t, err, ErrInvalidDocument)
}

// Two templates on one grant line are two functions, and a warning says the line covers both.
func TestSharedGrantLine(t *testing.T) {
	s, err := Parse(doc(`  /compare/{basehead}:
    get: {operationId: compareBasehead, parameters: [{name: basehead, in: path, required: true, schema: {type: string}}], responses: {'200': {description: ok}}}
  /compare/{base}...{head}:
    get: {operationId: compare, parameters: [{name: base, in: path, required: true, schema: {type: string}}, {name: head, in: path, required: true, schema: {type: string}}], responses: {'200': {description: ok}}}
`))
	require.NoError(t, err)
	require.Equal(t, []string{"GET /compare/*"}, s.Routes())
	require.Len(t, s.Ops, 2)
	require.Contains(t, strings.Join(s.Warnings(), "\n"), `share the grant line "GET /compare/*"`)
	pre, err := s.Preamble()
	require.NoError(t, err)
	js := loadPreamble(t, pre)
	calls, msg := js.call(`api.compare({base: "main", head: "dev"})`)
	require.Empty(t, msg)
	require.Equal(t, "/compare/main...dev", calls[0].Path)
}

// A GET never takes a body, even where the document declares one.
func TestGetTakesNoBody(t *testing.T) {
	s, err := Parse(doc(`  /search:
    get:
      operationId: search
      requestBody: {content: {application/json: {schema: {type: object, properties: {q: {type: string}}}}}}
      responses: {'200': {description: ok}}
`))
	require.NoError(t, err)
	require.Nil(t, s.Ops[0].Body)
	require.Contains(t, s.Warnings(), "specgen: GET /search: request body left out: a GET takes no body")
	require.Contains(t, s.Description(), "\nsearch_()\n", "search is api.search's name: the operation gets search_")
	pre, err := s.Preamble()
	require.NoError(t, err)
	js := loadPreamble(t, pre)
	_, msg := js.call(`api.search_({body: {q: "x"}})`)
	require.Equal(t, `search_: unknown parameter "body" (known: )`, msg)
}

// api.search and api.describe on a small client: typed signatures, the types they use, clear
// errors; api stays a plain, non-thenable object whose own keys are the generic functions.
func TestSearchSmallAPI(t *testing.T) {
	pre, err := loadStore(t, storeDocs[0]).Preamble()
	require.NoError(t, err)
	js := loadPreamble(t, pre)
	var a searchAnswer
	require.NoError(t, json.Unmarshal([]byte(js.eval(`JSON.stringify(api.search("add a pet"))`)), &a))
	require.Equal(t, "createPet", a.Results[0].Fn)
	require.Equal(t, "POST /pets", a.Results[0].Http)
	require.Equal(t, "createPet({body:NewPet}):Pet", a.Results[0].Sig)
	require.Equal(t, "{name:string,tag?:string|null}", a.Types["NewPet"])
	require.Equal(t, `{"fn":"getPet","http":"GET /pets/{petId}","summary":"Info for one pet","sig":"getPet({petId:int,fields?:(\"name\"|\"tag\"|\"status\")[],\"X-Request-Id\"?:uuid}):Pet","types":{"Pet":"{id:int,name:string,status?:\"available\"|\"sold\",tag?:string|null}"}}`,
		js.eval(`JSON.stringify(api.describe("getPet"))`))
	require.Equal(t, "2", js.eval(`String(api.search("pets", {limit: 2}).results.length)`))
	require.Equal(t, "0", js.eval(`String(api.search("zebra").results.length)`))
	for expr, msg := range map[string]string{
		`api.search(1)`:             "api.search: pass the words to look for as a string",
		`api.search("x", {max: 1})`: "api.search: options are {limit: n}",
		`api.describe("nope")`:      `api.describe: no function "nope"`,
		`api.describe({})`:          "api.describe: pass a function name as a string",
	} {
		require.Contains(t, js.eval(`(function () { try { `+expr+`; return "no error"; } catch (e) { return e.message; } })()`), msg, expr)
	}
	require.Equal(t, "true true false undefined function", js.eval(`["getPet" in api, typeof api.getPet === "function", "nope" in api, typeof api.then, typeof api.toString].join(" ")`))
	require.Equal(t, "true", js.eval(`api.getPet === api.getPet`), "a function is built once")
}
