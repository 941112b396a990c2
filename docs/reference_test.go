package docs_test

import (
	"bufio"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated parts of docs/*.md instead of checking them (make docs)")

// tableRows returns the rows of the first markdown table in file whose
// header's first cell is firstHeader, as trimmed cells.
func tableRows(t *testing.T, file, firstHeader string) [][]string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	in := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			if in {
				break
			}
			continue
		}
		cells := splitRow(line)
		switch {
		case !in && len(cells) > 0 && cells[0] == firstHeader:
			in = true
		case in && strings.HasPrefix(cells[0], "---"):
		case in:
			rows = append(rows, cells)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table headed %q", file, firstHeader)
	}
	return rows
}

// splitRow splits a table row on the bars that are not escaped (\|) and
// not inside backticks.
func splitRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cur strings.Builder
	code := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case c == '`':
			code = !code
			cur.WriteByte(c)
		case c == '|' && !code:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// codeSpans are the texts between backticks in s.
func codeSpans(s string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// goLiterals returns every string literal matching re in the Go files of
// the directories (named from the repository's root; "dir/..." takes its
// subdirectories too), test files only when tests is set, with the files
// it is in.
func goLiterals(t *testing.T, re *regexp.Regexp, tests bool, dirs ...string) map[string][]string {
	t.Helper()
	found := map[string][]string{}
	for _, dir := range dirs {
		root, deep := strings.CutSuffix(dir, "/...")
		root = filepath.Join("..", root)
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != root && (!deep || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || (!tests && strings.HasSuffix(path, "_test.go")) {
				return nil
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				if !slices.Contains(found[m[1]], path) {
					found[m[1]] = append(found[m[1]], path)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return found
}

// rewriteBetween replaces what lies between the marker lines
// "<!-- begin generated NAME -->" and "<!-- end generated NAME -->" in
// file with body; with -update it writes the file, else it fails when
// the file differs.
func rewriteBetween(t *testing.T, file, name, body string) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := "<!-- begin generated "+name+" -->\n", "<!-- end generated "+name+" -->"
	i, j := strings.Index(string(src), begin), strings.Index(string(src), end)
	if i < 0 || j < i {
		t.Fatalf("%s: markers %q … %q not found", file, strings.TrimSpace(begin), end)
	}
	out := string(src[:i+len(begin)]) + body + string(src[j:])
	if out == string(src) {
		return
	}
	if *update {
		if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the generated %s are out of date: run `make docs`", file, name)
}
