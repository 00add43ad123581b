package apigen

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"
)

func TestDocumentErrors(t *testing.T) {
	cases := []struct {
		name, doc, msg string
	}{
		{"not YAML", "openapi: [", "specgen: cannot read the OpenAPI document: "},
		{"swagger 2.0", "swagger: '2.0'\ninfo: {title: T, version: '1'}\npaths: {}\n", `specgen: openapi version "" is not supported; want 3.0 or 3.1`},
		{"no operations", "openapi: 3.0.3\ninfo: {title: T, version: '1'}\npaths: {}\n", "specgen: the document has no operation plimsoll can call"},
		{"invalid", "openapi: 3.0.3\ninfo: {title: T, version: '1'}\npaths:\n  /a:\n    get: {responses: {'200': {}}}\n", "specgen: the OpenAPI document is not valid: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			require.Error(t, err)
			require.ErrorIs(t, err, ErrInvalidDocument)
			require.Contains(t, err.Error(), tc.msg)
			var de *DocumentError
			require.True(t, errors.As(err, &de))
		})
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	_, err := Load("testdata/split/parts.yaml")
	require.EqualError(t, err, "specgen: parts.yaml: the document has no operation plimsoll can call")
	_, err = Load("testdata/missing.yaml")
	var pe *fs.PathError
	require.True(t, errors.As(err, &pe), "a read failure is the *fs.PathError it is")
	require.NotErrorIs(t, err, ErrInvalidDocument)
}

func TestFileRefs(t *testing.T) {
	_, err := Load("testdata/split/main.yaml")
	require.ErrorIs(t, err, ErrInvalidDocument)
	var ext *openapi3.DisallowedExternalRefError
	require.True(t, errors.As(err, &ext), "other files are not read unless allowed: %v", err)

	s, err := Loader{AllowFileRefs: true}.Load("testdata/split/main.yaml")
	require.NoError(t, err)
	require.Equal(t, []string{"GET /things/*"}, s.Routes())
	require.Contains(t, s.Description(), "getThing({id:int}):Thing\nTypes:\nThing={id:int,label?:string|null}\n")

	_, err = Loader{AllowFileRefs: true}.Parse([]byte(`openapi: 3.0.3
info: {title: T, version: '1'}
paths:
  /a:
    get:
      responses:
        '200': {$ref: 'http://169.254.169.254/latest#/x'}
`), "")
	require.ErrorContains(t, err, "only local files may be referenced")
}

func TestSkippedOperations(t *testing.T) {
	s, err := Parse(docWith(`  /ok:
    get: {` + okResp + `}
    trace: {` + okResp + `}
  /a;b:
    get: {` + okResp + `}
  /trailing/:
    get: {` + okResp + `}
  /star/*:
    get: {` + okResp + `}
  /m/{id}:
    get:
      parameters: [{name: id, in: path, required: true, style: matrix, schema: {type: string}}]
      ` + okResp + `
`))
	require.NoError(t, err)
	require.Equal(t, []string{"GET /ok"}, s.Routes())
	require.Equal(t, []string{
		`specgen: skipped GET /a;b: the path has a character the broker refuses or a route cannot express (printable ASCII only, without \ ; ? # % * or space)`,
		`specgen: skipped GET /m/{id}: path parameter "id" uses style "matrix"; only simple and label can be sent through the broker`,
		`specgen: skipped TRACE /ok: the broker allows only GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS`,
		`specgen: skipped GET /star/*: the path has a character the broker refuses or a route cannot express (printable ASCII only, without \ ; ? # % * or space)`,
		`specgen: skipped GET /trailing/: the path has an empty segment ('//' or a trailing '/'), which the broker refuses`,
	}, s.Warnings())
}

func TestRouteTemplates(t *testing.T) {
	s, err := Parse(docWith(`  /files/{name}.json:
    get:
      operationId: getFile
      parameters: [{name: name, in: path, required: true, schema: {type: string}}]
      ` + okResp + `
  /v1/{project}:cancel/{op}:
    post:
      parameters:
        - {name: project, in: path, required: true, schema: {type: string}}
        - {name: op, in: path, required: true, style: label, schema: {type: string}}
      ` + okResp + `
`))
	require.NoError(t, err)
	require.Equal(t, []string{"GET /files/*", "POST /v1/*/*"}, s.Routes())
	pre, _ := s.Preamble()
	js := loadPreamble(t, pre)
	require.Equal(t, "/files/a%20b.json", js.one(`api.getFile({name: "a b"})`).Path)
	require.Equal(t, "/v1/p1:cancel/.7", js.one(`api.postV1ProjectCancelByOp({project: "p1", op: 7})`).Path)
	js.refuse(`api.getFile({})`, `getFile: missing required parameter "name"`)
}

func TestQueryStylesAndBodies(t *testing.T) {
	s, err := Parse(docWith(`  /q:
    get:
      operationId: q
      parameters:
        - {name: sp, in: query, style: spaceDelimited, schema: {type: array, items: {type: string}}}
        - {name: pipe, in: query, style: pipeDelimited, schema: {type: array, items: {type: integer}}}
        - {name: filter, in: query, style: deepObject, explode: true, schema: {type: object, additionalProperties: {type: string}}}
        - {name: obj, in: query, schema: {type: object, properties: {a: {type: string}}}}
        - {name: flat, in: query, explode: false, schema: {type: object, properties: {a: {type: string}}}}
        - {name: js, in: query, content: {application/json: {schema: {type: object}}}}
        - {name: "a b", in: query, schema: {type: boolean}}
      ` + okResp + `
  /text:
    post:
      operationId: text
      requestBody: {required: true, content: {text/plain: {schema: {type: string}}}}
      ` + okResp + `
  /form:
    post:
      operationId: form
      requestBody: {content: {application/x-www-form-urlencoded: {schema: {type: object, properties: {a: {type: string}}}}}}
      ` + okResp + `
  /vendor:
    put:
      operationId: vendor
      requestBody: {content: {application/vnd.api+json: {schema: {type: object}}, text/plain: {}}}
      ` + okResp + `
`))
	require.NoError(t, err)
	pre, _ := s.Preamble()
	js := loadPreamble(t, pre)

	c := js.one(`api.q({sp: ["a", "b c"], pipe: [1, 2], filter: {x: "1", "y z": "2"}, obj: {a: "v"}, flat: {a: "v w"}, js: {k: [1]}, "a b": true})`)
	require.Equal(t, strp("sp=a%20b%20c&pipe=1|2&filter[x]=1&filter[y%20z]=2&a=v&flat=a,v%20w&js=%7B%22k%22%3A%5B1%5D%7D&a%20b=true"), c.Opts.Query)
	c = js.one(`api.q({sp: []})`)
	require.Nil(t, c.Opts.Query, "an empty array adds nothing")

	c = js.one(`api.text({body: "hello"})`)
	require.Equal(t, strp("hello"), c.Opts.Body)
	require.Equal(t, map[string]string{"Content-Type": "text/plain"}, c.Opts.Headers)
	js.refuse(`api.text({body: {a: 1}})`, `text: body must be a string for text/plain`)

	c = js.one(`api.form({body: {a: "x y", b: ["1", "2"]}})`)
	require.Equal(t, strp("a=x%20y&b=1&b=2"), c.Opts.Body)
	require.Equal(t, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, c.Opts.Headers)
	c = js.one(`api.form()`)
	require.Nil(t, c.Opts.Body, "an optional body may be left out")

	c = js.one(`api.vendor({body: {a: 1}})`)
	require.Equal(t, strp(`{"a":1}`), c.Opts.Body)
	require.Equal(t, map[string]string{"Content-Type": "application/vnd.api+json"}, c.Opts.Headers)
	js.refuse(`api.vendor({body: {toJSON: function () { return undefined; }}})`, `vendor: body cannot be sent as JSON`)

	d := s.Description()
	require.Contains(t, d, "\nq({sp?:string[],pipe?:int[],filter?:{[k]:string},obj?:{a?:string},flat?:{a?:string},js?:object,\"a b\"?:bool})\n")
	require.Contains(t, d, "\ntext({body:string})\n")
	require.Contains(t, d, "\nform({body?:{a?:string}})\n")
}
