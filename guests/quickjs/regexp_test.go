package quickjs_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/abi"
)

// The regexp built-ins (split, replace, match: the engine has fast paths for them, src/patches/)
// must give what node gives. testdata/regexp_node.json holds node's values for every case of
// testdata/regexp_cases.js; regenerate it with node installed:
//
//	PLIMSOLL_UPDATE_NODE_GOLDEN=1 go test -run TestRegExpAgainstNode ./guests/quickjs/
const (
	regexpCasesPath  = "testdata/regexp_cases.js"
	regexpGoldenPath = "testdata/regexp_node.json"
)

type regexpGolden struct {
	Node    string        `json:"node"`
	Results []regexpValue `json:"results"`
}

type regexpValue struct {
	Case  string `json:"case"`
	Value string `json:"value"` // JSON.stringify of the case's value, or "throws <Error name>"
}

func regexpCases(t *testing.T) []string {
	text, err := os.ReadFile(regexpCasesPath)
	require.NoError(t, err)
	var cases []string
	for _, line := range strings.Split(string(text), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "//") {
			cases = append(cases, line)
		}
	}
	return cases
}

// regexpProgram evaluates every case, each on its own, to its JSON text.
func regexpProgram(cases []string) string {
	var b strings.Builder
	b.WriteString("const cases = [\n")
	for _, c := range cases {
		b.WriteString("  () => (" + c + "),\n")
	}
	b.WriteString(`];
return cases.map((f) => { try { return JSON.stringify(f()); } catch (e) { return "throws " + e.name; } });`)
	return b.String()
}

func TestRegExpAgainstNode(t *testing.T) {
	cases := regexpCases(t)
	program := regexpProgram(cases)
	if os.Getenv("PLIMSOLL_UPDATE_NODE_GOLDEN") != "" {
		writeNodeGolden(t, cases, program)
	}
	text, err := os.ReadFile(regexpGoldenPath)
	require.NoError(t, err)
	var golden regexpGolden
	require.NoError(t, json.Unmarshal(text, &golden))
	want := map[string]string{}
	for _, r := range golden.Results {
		want[r.Case] = r.Value
	}

	r := runTool(t, nil, runInput{Tool: program})
	require.Equal(t, int(abi.ExitOK), int(r.code), r)
	var got []string
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Len(t, got, len(cases))
	for i, c := range cases {
		w, ok := want[c]
		if !assert.True(t, ok, "no node value for %s: regenerate %s", c, regexpGoldenPath) {
			continue
		}
		assert.Equal(t, w, got[i], c)
	}
}

// writeNodeGolden runs the program in node and writes its values as the golden file.
func writeNodeGolden(t *testing.T, cases []string, program string) {
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed to regenerate the golden file")
	version, err := exec.Command(node, "--version").Output()
	require.NoError(t, err)
	out, err := exec.Command(node, "-e", "console.log(JSON.stringify((() => {"+program+"\n})()))").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var values []string
	require.NoError(t, json.Unmarshal(out, &values), "%s", out)
	require.Len(t, values, len(cases))
	g := regexpGolden{Node: strings.TrimSpace(string(version))}
	for i, c := range cases {
		g.Results = append(g.Results, regexpValue{Case: c, Value: values[i]})
	}
	text, err := json.MarshalIndent(g, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(regexpGoldenPath, append(text, '\n'), 0o644))
}
