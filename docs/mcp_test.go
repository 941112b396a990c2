package docs_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/mcp/server"
)

var clientVariable = regexp.MustCompile(`"(LETAGENTS_[A-Z0-9_]+)"`)

// TestMCPVariablesTable: mcp.md's table lists every LETAGENTS_ variable
// the agent's binary reads, and nothing it does not.
func TestMCPVariablesTable(t *testing.T) {
	documented := tableNames(t, "mcp.md", "variable")
	read := goLiterals(t, clientVariable, false, "mcp/...")
	for v, files := range read {
		if !slices.Contains(documented, v) {
			t.Errorf("%s, read in %s, is not in docs/mcp.md's variables", v, strings.Join(files, ", "))
		}
	}
	for _, v := range documented {
		if strings.HasPrefix(v, "LETAGENTS_") && read[v] == nil {
			t.Errorf("docs/mcp.md lists %s, which the agent's binary does not read", v)
		}
	}
}

// TestMCPToolsTable: mcp.md's tool table is generated from the tools the
// MCP server registers (their names, arguments and first sentence), so a
// tool added, renamed or removed fails here until `make docs` runs.
func TestMCPToolsTable(t *testing.T) {
	s, err := server.New(server.Config{StatePath: filepath.Join(t.TempDir(), "state.json"), APIURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	tools := s.MCP().ListTools()
	names := slices.Sorted(maps.Keys(tools))
	var b strings.Builder
	b.WriteString("| tool | arguments (* required) | what it does |\n|---|---|---|\n")
	for _, name := range names {
		tool := tools[name].Tool
		var args []string
		for _, arg := range slices.Sorted(maps.Keys(tool.InputSchema.Properties)) {
			if slices.Contains(tool.InputSchema.Required, arg) {
				arg += "*"
			}
			args = append(args, "`"+arg+"`")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", name, strings.Join(args, ", "), strings.ReplaceAll(firstSentence(tool.Description), "|", `\|`))
	}
	if len(names) < 40 {
		t.Fatalf("only %d tools registered: %v", len(names), names)
	}
	rewriteBetween(t, "mcp.md", "tools", b.String())
}

// firstSentence is s up to the end of its first sentence (a tool's
// description leads with what it does; the rest is for the model).
func firstSentence(s string) string {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '.' && s[i+1] == ' ' && !strings.HasSuffix(s[:i], "e.g") && !strings.HasSuffix(s[:i], "i.e") {
			return s[:i+1]
		}
	}
	return s
}
