package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRun rewrites a copy of template.yaml whose routes went stale back to
// the real one, and leaves an up-to-date copy and its mode alone.
func TestRun(t *testing.T) {
	t.Parallel()
	good, err := os.ReadFile(filepath.Join("..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Empty every generated block, as if every route were new.
	block := regexp.MustCompile(`(?s)(# begin generated [^\n]*\n).*?( *# end generated )`)
	stale := block.ReplaceAllString(string(good), "$1$2")
	if stale == string(good) {
		t.Fatal("template.yaml has no generated blocks to empty")
	}
	tests := []struct{ name, src string }{
		{"stale", stale},
		{"up to date", string(good)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "template.yaml")
			if err := os.WriteFile(path, []byte(tt.src), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := run(path); err != nil {
				t.Fatalf("run: %v", err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(good) {
				t.Errorf("run left %d bytes, want template.yaml's %d", len(got), len(good))
			}
			if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("mode after run = %v (%v), want 0600 kept", st.Mode().Perm(), err)
			}
		})
	}
}

func TestRunRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	unbalanced := filepath.Join(dir, "unbalanced.yaml")
	const src = "Resources:\n  # begin generated permissions\n"
	if err := os.WriteFile(unbalanced, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, path, wantErr string }{
		{"no file", filepath.Join(dir, "missing.yaml"), "no such file"},
		{"no end marker", unbalanced, "has no end generated permissions"},
	}
	for _, tt := range tests {
		// Not parallel: the check below the loop must follow them.
		t.Run(tt.name, func(t *testing.T) {
			if err := run(tt.path); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("run(%s) = %v, want an error containing %q", tt.path, err, tt.wantErr)
			}
		})
	}
	if got, err := os.ReadFile(unbalanced); err != nil || string(got) != src {
		t.Errorf("a refused template was changed to %q (%v)", got, err)
	}
}
