package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/config"
)

// tableNames are the backticked names in the first cell of each row of
// file's table headed firstHeader.
func tableNames(t *testing.T, file, firstHeader string) []string {
	var names []string
	for _, row := range tableRows(t, file, firstHeader) {
		names = append(names, codeSpans(row[0])...)
	}
	return names
}

// readByScript reports whether a script under .ci reads name.
func readByScript(t *testing.T, name string) bool {
	t.Helper()
	scripts, err := filepath.Glob(filepath.Join("..", ".ci", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scripts {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), name) {
			return true
		}
	}
	return false
}

var serverVariable = regexp.MustCompile(`"((?:LETAGENTS|DB|GITHUB)_[A-Z0-9_]+|GOMAXPROCS)"`)

// TestConfigurationTableIsTheVariables: configuration.md lists every
// variable the service's configuration loader reads and every one the
// local runner and the test set-up read, and nothing that no code reads.
func TestConfigurationTableIsTheVariables(t *testing.T) {
	documented := tableNames(t, "configuration.md", "variable")
	for _, v := range config.Variables {
		if !slices.Contains(documented, v) {
			t.Errorf("%s (config.Variables) is not in docs/configuration.md", v)
		}
	}
	read := goLiterals(t, serverVariable, false, "shared/...", "functions/...", "localdev", "localdev/embeddedpg/...")
	for v, files := range read {
		if !slices.Contains(documented, v) {
			t.Errorf("%s, read in %s, is not in docs/configuration.md", v, strings.Join(files, ", "))
		}
	}
	anywhere := goLiterals(t, serverVariable, true, "./...")
	for _, v := range documented {
		if !slices.Contains(config.Variables, v) && anywhere[v] == nil && !readByScript(t, v) {
			t.Errorf("docs/configuration.md lists %s, which nothing reads", v)
		}
	}
}
