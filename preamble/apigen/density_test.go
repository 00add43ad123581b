package apigen

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// largeDoc builds a realistic OpenAPI 3.1 document with six operations per resource: list
// (paged, filtered, with an array query parameter), create, get, update, delete and an action.
func largeDoc(resources int) []byte {
	nouns := []string{"user", "order", "invoice", "product", "customer", "shipment", "payment",
		"refund", "coupon", "review", "ticket", "agent", "team", "project", "task", "comment",
		"webhook", "report", "warehouse", "supplier", "contract", "subscription", "plan", "device"}
	paths := map[string]any{}
	schemas := map[string]any{}
	okJSON := func(schema any) map[string]any {
		return map[string]any{"200": map[string]any{"description": "ok",
			"content": map[string]any{"application/json": map[string]any{"schema": schema}}}}
	}
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	for i := 0; i < resources; i++ {
		noun := nouns[i%len(nouns)]
		if i >= len(nouns) {
			noun += string(rune('a' + i/len(nouns)))
		}
		Type := strings.ToUpper(noun[:1]) + noun[1:]
		coll, item := "/"+noun+"s", "/"+noun+"s/{"+noun+"Id}"
		idParam := map[string]any{"name": noun + "Id", "in": "path", "required": true, "schema": map[string]any{"type": "string"}}
		schemas[Type] = map[string]any{
			"type": "object", "required": []string{"id", "name", "status"},
			"properties": map[string]any{
				"id":         map[string]any{"type": "string", "format": "uuid"},
				"name":       map[string]any{"type": "string"},
				"status":     map[string]any{"type": "string", "enum": []string{"active", "archived"}},
				"created_at": map[string]any{"type": "string", "format": "date-time"},
				"tags":       map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				"amount":     map[string]any{"type": []string{"number", "null"}},
				noun + "_no": map[string]any{"type": "integer"}, // so no two resources share a shape
			},
		}
		schemas["New"+Type] = map[string]any{
			"type": "object", "required": []string{"name"},
			"properties": map[string]any{
				"name": map[string]any{"type": "string"},
				"tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			},
		}
		paths[coll] = map[string]any{
			"get": map[string]any{"operationId": "list" + Type + "s", "summary": "List " + noun + "s, newest first",
				"parameters": []any{
					map[string]any{"name": "limit", "in": "query", "schema": map[string]any{"type": "integer", "maximum": 100}},
					map[string]any{"name": "cursor", "in": "query", "schema": map[string]any{"type": "string"}},
					map[string]any{"name": "tag", "in": "query", "schema": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}},
				},
				"responses": okJSON(map[string]any{"type": "object", "required": []string{"items"}, "properties": map[string]any{
					"items": map[string]any{"type": "array", "items": ref(Type)}, "next": map[string]any{"type": "string"}}}),
			},
			"post": map[string]any{"operationId": "create" + Type, "summary": "Create a " + noun,
				"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": ref("New" + Type)}}},
				"responses":   okJSON(ref(Type)),
			},
		}
		paths[item] = map[string]any{
			"parameters": []any{idParam},
			"get":        map[string]any{"operationId": "get" + Type, "summary": "Get one " + noun, "responses": okJSON(ref(Type))},
			"patch": map[string]any{"operationId": "update" + Type, "summary": "Update a " + noun,
				"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": ref("New" + Type)}}},
				"responses":   okJSON(ref(Type))},
			"delete": map[string]any{"operationId": "delete" + Type, "summary": "Delete a " + noun,
				"responses": map[string]any{"204": map[string]any{"description": "deleted"}}},
		}
		paths[item+"/archive"] = map[string]any{
			"parameters": []any{idParam},
			"post":       map[string]any{"operationId": "archive" + Type, "summary": "Archive a " + noun, "responses": okJSON(ref(Type))},
		}
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info":    map[string]any{"title": "Large API", "version": "1.0.0"},
		"servers": []any{map[string]any{"url": "https://api.example.com/v1"}},
		"paths":   paths, "components": map[string]any{"schemas": schemas},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return b
}

type density struct {
	ops, bytes, words int
}

func measure(t testing.TB, resources int) density {
	s, err := Parse(largeDoc(resources))
	require.NoError(t, err)
	d := s.Listing()
	return density{ops: len(s.Ops), bytes: len(d), words: len(strings.Fields(d))}
}

// TestDescriptionDensity reports the description's size for a 120-operation document. For
// comparison, Cloudflare's Code Mode puts 2,500 endpoints in about 1,000 tokens (0.4 tokens,
// roughly 1.6 bytes, per endpoint) by not listing them at all: its model searches the spec from
// inside the sandbox. We list every function with typed parameters, so the figure to watch is
// bytes per operation, not the total.
func TestDescriptionDensity(t *testing.T) {
	m := measure(t, 20)
	require.Equal(t, 120, m.ops)
	t.Logf("description for %d operations: %d bytes, %d words, %.1f bytes/op, %.2f words/op (≈%d tokens at 4 bytes/token)",
		m.ops, m.bytes, m.words, float64(m.bytes)/float64(m.ops), float64(m.words)/float64(m.ops), m.bytes/4)
	require.Less(t, m.bytes/m.ops, 90, "a function line plus its share of the types should stay under 90 bytes")
	require.LessOrEqual(t, Tokens(strings.Repeat("x", m.bytes))/m.ops, 40, "at most 40 tokens per operation listed in full")
}

// TestDescriptionThreshold: an API whose listing fits FullListingMaxTokens is listed in full;
// past it, the description is the index, within IndexMaxTokens, whatever the size.
func TestDescriptionThreshold(t *testing.T) {
	for _, resources := range []int{1, 5, 10, 20, 40, 200} {
		s, err := Parse(largeDoc(resources))
		require.NoError(t, err)
		d, full := s.Description(), s.Listing()
		// The heading, convention and legend are paid once; the figure is what each function
		// adds (its line and its share of the types).
		head, _, _ := strings.Cut(full, "Functions:\n")
		perOp := float64(Tokens(full)-Tokens(head)) / float64(len(s.Ops))
		if Tokens(full) <= FullListingMaxTokens {
			require.Equal(t, full, d, "%d operations are listed in full", len(s.Ops))
			require.LessOrEqual(t, perOp, 40.0, "%d operations", len(s.Ops))
		} else {
			require.NotEqual(t, full, d)
			require.LessOrEqual(t, Tokens(d), IndexMaxTokens, "%d operations", len(s.Ops))
			require.Contains(t, d, "api.search(")
		}
		t.Logf("%4d operations: listing %5d tokens (heading %d, then %.1f/op), description %5d tokens", len(s.Ops), Tokens(full),
			Tokens(head), perOp, Tokens(d))
	}
}

func BenchmarkDescription(b *testing.B) {
	s, err := Parse(largeDoc(20))
	require.NoError(b, err)
	var d string
	for b.Loop() {
		d = s.Description()
	}
	ops := float64(len(s.Ops))
	b.ReportMetric(ops, "ops")
	b.ReportMetric(float64(len(d)), "desc-bytes")
	b.ReportMetric(float64(len(strings.Fields(d))), "desc-words")
	b.ReportMetric(float64(len(d))/ops, "bytes/op")
	b.ReportMetric(float64(len(strings.Fields(d)))/ops, "words/op")
}
