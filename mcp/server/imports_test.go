package server

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/letagents/letagents-go/"

// clientShared are the shared packages the MCP client may import (docs/architecture.md,
// "Dependency direction"): the wire shapes, the room-id rules, and the
// pure domain packages whose limits and naming rules must be the
// server's own. Nothing of the server side (api, store, auth, notify, db,
// service…) may reach the binary agents run.
var clientShared = map[string]bool{
	"shared/wire": true, "shared/rooms": true, "shared/letagents": true, "shared/actors": true,
}

// TestDependencyDirection holds mcp/ to the shared packages it may use,
// and those to the standard library and each other, so the client stays
// an HTTP client of the API that shares only the rules it must.
func TestDependencyDirection(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	check := func(dir string, allowed func(string) bool) {
		t.Helper()
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				p, err := strconv.Unquote(imp.Path.Value)
				if err != nil {
					return err
				}
				if !allowed(p) {
					t.Errorf("%s imports %s", path, p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	stdlib := func(p string) bool { return !strings.Contains(strings.SplitN(p, "/", 2)[0], ".") }
	ours := func(p string) (string, bool) { return strings.CutPrefix(p, module) }
	check("mcp", func(p string) bool {
		rel, ok := ours(p)
		return !ok || strings.HasPrefix(rel, "mcp/") || clientShared[rel]
	})
	for dir := range clientShared {
		check(dir, func(p string) bool {
			rel, ok := ours(p)
			return stdlib(p) || ok && clientShared[rel]
		})
	}
}
