package mcpserver

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/profiles"
)

// ToolPrefix starts every tool's name: run_<profile>.
const ToolPrefix = "run_"

// maxToolName is the SDK's (and the spec's) longest tool name.
const maxToolName = 128

// ToolName is the tool serving profile: "run_" and the name, every character outside
// [A-Za-z0-9_-] written as '_', cut to 128 characters.
func ToolName(profile string) string {
	var b strings.Builder
	b.WriteString(ToolPrefix)
	for _, r := range profile {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		if b.Len() >= maxToolName {
			break
		}
	}
	return b.String()
}

// Convention is the first line of every tool description: how the code is run, in as few tokens
// as we could.
const Convention = "Runs JavaScript: `code` is the body of an async function with `input` in scope; `return` the result (JSON). Only `api.*` reaches the network.\n" + pythonConvention

// pythonConvention tells a model the same tool runs Python, and how its api differs.
const pythonConvention = "With `language:\"python\"` `code` is Python 3.13, the same (`await api.get(path,query=,headers=)`, `r.json()`).\n"

// rawAPI says how to call the API without a generated client.
const rawAPI = "api.get(path,{query,headers}), api.post(path,body,{query,headers}), put, patch, delete, api.call(method,path,{query,headers,body}) resolve to {status,ok,outcome,headers,body,json(),text()}; HTTP errors do not throw, but json() does when the broker answered (outcome not forwarded).\n"

// maxDescriptionFile caps a description file: it is sent to every client on every tools/list.
const maxDescriptionFile = 1 << 20

// DescriptionFile returns the file a profile's description field names, or "" when the field
// holds inline text. A file reference is one word ending in .txt or .md, relative to the
// profile's directory and inside it (plimsoll-specgen -emit all writes NAME.description.txt).
func DescriptionFile(p *profiles.Profile) (string, error) {
	d := strings.TrimSpace(p.Description)
	if d == "" || strings.ContainsAny(d, " \t\r\n") {
		return "", nil
	}
	if ext := strings.ToLower(filepath.Ext(d)); ext != ".txt" && ext != ".md" {
		return "", nil
	}
	if filepath.IsAbs(d) || !filepath.IsLocal(d) {
		return "", fmt.Errorf("description %q: a description file must be a relative path inside the profile's directory", d)
	}
	return filepath.Join(filepath.Dir(p.File), d), nil
}

// APIText is the profile's API as a tool description shows it: the description file's text
// (plimsoll-specgen's), or else the inline description, how to call the API and the route list.
func APIText(p *profiles.Profile) (string, error) {
	path, err := DescriptionFile(p)
	if err != nil {
		return routeText(p), err
	}
	if path != "" {
		text, err := readCapped(path, maxDescriptionFile)
		if err != nil {
			return routeText(p), fmt.Errorf("description file %s: %w", path, err)
		}
		return strings.TrimRight(text, "\n") + "\n", nil
	}
	return routeText(p), nil
}

func routeText(p *profiles.Profile) string {
	var b strings.Builder
	if d := strings.TrimSpace(p.Description); d != "" {
		b.WriteString(d + "\n")
	}
	b.WriteString(rawAPI)
	b.WriteString("Granted routes (* is one path segment):\n")
	for _, r := range p.Routes {
		b.WriteString(r.String() + "\n")
	}
	return b.String()
}

func readCapped(path string, max int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		if pe := (*os.PathError)(nil); errors.As(err, &pe) {
			return "", pe.Err
		}
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return "", err
	}
	if int64(len(b)) > max {
		return "", fmt.Errorf("over %d bytes", max)
	}
	return string(b), nil
}

// Description is the whole tool description for p: the convention line, then the API.
func Description(p *profiles.Profile) (string, error) {
	api, err := APIText(p)
	return Convention + api, err
}

// The tool's input and output schemas, written out rather than inferred so that they stay as
// short as the protocol allows: every client lists them.
var (
	inputSchema = &jsonschema.Schema{
		Type:     "object",
		Required: []string{"code"},
		Properties: map[string]*jsonschema.Schema{
			"code":     {Type: "string"},
			"language": {Type: "string", Enum: languages()},
			"input":    {Description: "any JSON"}, // an empty schema would marshal as true, which some clients refuse
			"timeout":  {Type: "string", Description: "optional run deadline such as 5s; the profile's run_timeout caps it"},
		},
	}
	outputSchema = &jsonschema.Schema{
		Type:     "object",
		Required: []string{"output", "status", "run_id", "calls", "log"},
		Properties: map[string]*jsonschema.Schema{
			"output": {Description: "any JSON"},
			"status": {Type: "string"},
			"run_id": {Type: "string"},
			"calls": {Type: "object", Properties: map[string]*jsonschema.Schema{
				"forwarded": integer(), "shed": integer(), "denied": integer(), "over_budget": integer(), "invalid": integer(), "failed": integer(),
			}},
			"log": {Type: "string"},
		},
	}
)

func integer() *jsonschema.Schema { return &jsonschema.Schema{Type: "integer"} }

// languages are the values of a call's language field: the languages the host runs.
func languages() []any {
	var ls []any
	for _, l := range host.Languages() {
		ls = append(ls, l)
	}
	return ls
}
