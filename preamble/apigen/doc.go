// Package apigen (generated API artefacts) turns one OpenAPI document into everything a plimsoll run needs for that API:
// the grant profile's route list, a JavaScript client library (the per-API preamble), the tool
// description an agent's model reads, the one-line health file and a complete profile skeleton.
// The routes, the client and the health route all come from the same document, so nothing is
// copied by hand and nothing drifts.
//
//	spec, err := apigen.Load("petstore.yaml") // OpenAPI 3.0 or 3.1, YAML or JSON, $refs resolved
//	spec.Routes()                              // ["GET /pets", "GET /pets/*", ...]
//	spec.Preamble()                            // JS: api.getPet({petId: 42}), ...
//	spec.Description()                         // what the model reads
//	spec.Health()                              // "GET /status", true — only when tagged
//	spec.Profile(apigen.ProfileOptions{...})  // YAML, as in ARCHITECTURE.md "Grant profiles"
//	apigen.WriteAll(spec, dir, "petstore")    // all of it, into dir
//
// # Health route
//
// Only the operation extension x-plimsoll-health-check: true marks the route the broker probes
// while it sheds calls; a path called /status or /healthz is no evidence of readiness and is never
// picked on its own. The tagged operation must be a GET of a path without parameters, and only one
// operation may be tagged; otherwise Health, Profile and WriteAll return a *HealthTagError
// (errors.Is ErrHealthTag) naming the operations.
//
// # The generated preamble
//
// It runs after the generic preamble (preamble/js). The client is data plus one generic builder
// (runtime.js): one tab-separated line per operation in a string literal, sorted by name, and
// api's prototype becomes a Proxy that builds a function the first time a tool touches its name
// (binary search, then one JSON.parse of that line's parameters). So loading a client of 1,200
// operations makes no function, array or object per operation; it costs what the engine takes to
// read the literals. The same tables carry the search index (an inverted index built here, with
// searchWords) and the named types, for api.search(text, {limit}) and api.describe(name), which
// run in the sandbox, make no call, and answer within SearchMaxTokens.
//
// Each function on api is named from the operationId (or from method and path) through Ident: always an ASCII identifier,
// never a reserved word, never the generic call/get/post/put/patch/delete, never "then" (which
// would make api a thenable), never twice. Each function takes one object: path, query and
// header parameters by name (a parameter whose name collides gets the key "<in>_<name>"), and
// body. It builds the path from the template, percent-encoding each path value into its one
// segment (everything but RFC 3986 unreserved characters), and refuses the values the broker's
// canonical-path rule would refuse (empty, "." or "..", or containing "/", "\" or "%") before any
// call. Query parameters are encoded by their OpenAPI style (form, spaceDelimited,
// pipeDelimited, deepObject; arrays and objects) into the query string, which is passed to
// api.call already encoded; a JSON body is sent as JSON text with its Content-Type. Argument
// errors reject the returned Promise (as the generic preamble's do), naming the parameter.
//
// # Tool description
//
// A small API is listed in full (one compact line per function and per named type, document
// prose reduced to plain text: HTML and Markdown stripped, long text cut). When that listing
// would pass FullListingMaxTokens (IndexMaxTokens + SearchMaxTokens: 2,500 tokens at bytes/4),
// the description is an index instead: the calling convention, how to use api.search and
// api.describe, and the resource groups (first tag, or first path segment) with their sizes,
// within IndexMaxTokens whatever the API's size. Listing gives the full form regardless.
//
// # What is refused
//
// Only what makes the grant or the client ambiguous: one call declared twice (the same METHOD and
// path template up to parameter names) is an *AmbiguousError; a misused health tag is a
// *HealthTagError. Strict OpenAPI rules that do not matter here are warnings: two templated paths
// that differ only in parameter names (GitHub's "/orgs/{org}/attestations/{subject_digest}" GET
// and ".../{attestation_id}" DELETE), and two templates that share one grant line
// ("/compare/{basehead}" and "/compare/{base}...{head}"). A GET or HEAD never takes a body, even
// where the document declares one.
//
// Every string from the document reaches the JavaScript only through JSString (or its
// single-quoted form, which also writes '*' as an escape, so no "*/" appears), which writes
// printable ASCII only (quotes, backslashes, '<', '>', '&', line and paragraph separators and all
// non-ASCII escaped), and the fixed code (runtime.js) is data-driven: the document contributes
// data, never code. Comments carry only commentSafe text.
//
// Left out, each with a warning (Spec.Warnings): operations whose method the broker does not
// allow (TRACE, QUERY, custom methods), whose path the broker could never accept (non-ASCII, a
// ';', '%', '*', an empty segment or a trailing '/'), or whose path parameters use the matrix
// style (';'); cookie parameters and header parameters the broker refuses from a guest
// (Cookie, Host, the credential's header, hop-by-hop headers). Operation-level servers are
// ignored: base_url comes from servers[0] only.
//
// # Choice of OpenAPI library (RATIONALE)
//
// kin-openapi (github.com/getkin/kin-openapi v0.153.0), not pb33f/libopenapi. Checked in the
// module's source before choosing:
//
//   - OpenAPI 3.1 is supported since its PR #1125 (merged 2026): openapi3.T has Webhooks and
//     JSONSchemaDialect, and doc.IsOpenAPI31OrLater(); Schema.Type is *openapi3.Types, a
//     []string whose UnmarshalJSON accepts both "string" and ["string", "null"], with
//     IncludesNull/Slice helpers; ExclusiveMin/Max are a bool-or-number union; const, examples,
//     prefixItems, $defs, if/then/else are fields. Validate switches to JSON Schema 2020-12 for
//     3.1 documents (openapi3.IsOpenAPI31OrLater()).
//   - Tried on this package's testdata: store31.yaml (openapi: 3.1.0, type: [string, "null"],
//     numeric exclusiveMinimum, examples) loads, validates and yields exactly the output of the
//     3.0 YAML and JSON forms; path-level $ref parameters, $ref'd responses and schemas resolve
//     (SchemaRef keeps the $ref string, which the description uses to name types).
//   - YAML and JSON both go through one loader; external $refs are refused unless asked for
//     (Loader.IsExternalRefsAllowed), and a custom reader can allow local files without HTTP
//     (Loader.AllowFileRefs here), so a document cannot make the generator fetch a URL.
//   - It was already in go.mod, and needs only small modules (jsonpointer, yaml/v4,
//     santhosh-tekuri/jsonschema). libopenapi is also well kept and models 3.1 natively with
//     low-level node positions, but it would add a second OpenAPI stack (and its own YAML and
//     ordered-map dependencies) for features (document diffing, rendering, mutation) this
//     generator does not use.
//
// Known kin-openapi limits that matter here: 3.2 is partial (the QUERY method and
// additionalOperations parse, and are skipped as methods the broker does not allow); map order
// of properties is not kept, so the description lists properties by name.
package apigen
