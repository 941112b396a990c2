package infra

import (
	"fmt"
	"go/version"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// golangImage matches a build stage's official Go image and captures its
// tag's version: golang:1.26.8, golang:1.26.8-bookworm, golang:1.26rc1.
var golangImage = regexp.MustCompile(`(?:^|\s)(?:docker\.io/)?(?:library/)?golang:([0-9][^\s@-]*)`)

// dockerfileGo returns the Go version ("go1.26.8") of the golang image a
// Dockerfile builds with. A tag naming no patch release (golang:1.26)
// floats: which 1.26.x it means depends on the image cache.
func dockerfileGo(dockerfile string) (string, error) {
	var tags []string
	for _, line := range strings.Split(dockerfile, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.EqualFold(f[0], "FROM") {
			continue
		}
		if m := golangImage.FindStringSubmatch(line); m != nil {
			tags = append(tags, m[1])
		}
	}
	if len(tags) != 1 {
		return "", fmt.Errorf("want one golang:<version> build image, found %q", tags)
	}
	v := "go" + tags[0]
	// A language version (go1.26) is no release: version.Lang of a release
	// (go1.26.8, go1.27rc1) is shorter than the release itself.
	if !version.IsValid(v) || version.Lang(v) == v {
		return "", fmt.Errorf("golang:%s names no exact Go release (want e.g. golang:1.26.8-bookworm)", tags[0])
	}
	return v, nil
}

// goModGo returns go.mod's go line as a Go version ("go1.26.8").
func goModGo(gomod string) (string, error) {
	for _, line := range strings.Split(gomod, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "go "); ok {
			return "go" + strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("go.mod has no go line")
}

// TestDockerfileGo: the poll image builds with an exact Go release no
// older than go.mod's go line. The golang images set GOTOOLCHAIN=local, so
// an older toolchain refuses to build the module at all.
func TestDockerfileGo(t *testing.T) {
	t.Parallel()
	df, err := os.ReadFile(filepath.Join(root, pollDockerfile))
	if err != nil {
		t.Fatal(err)
	}
	gm, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	image, err := dockerfileGo(string(df))
	if err != nil {
		t.Fatalf("%s: %v", pollDockerfile, err)
	}
	mod, err := goModGo(string(gm))
	if err != nil {
		t.Fatal(err)
	}
	if version.Compare(image, mod) < 0 {
		t.Errorf("%s builds with %s, older than go.mod's go line %s: with GOTOOLCHAIN=local the build fails; pin golang:%s-bookworm",
			pollDockerfile, image, mod, strings.TrimPrefix(mod, "go"))
	}
}

func TestDockerfileGoParses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dockerfile, want, wantErr string
	}{
		{"FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm AS build\nFROM gcr.io/distroless/static", "go1.26.8", ""},
		{"FROM golang:1.27.0 AS build", "go1.27.0", ""},
		{"FROM docker.io/library/golang:1.26.10-alpine AS b", "go1.26.10", ""},
		{"FROM golang:1.27rc1 AS build", "go1.27rc1", ""},
		{"FROM --platform=$BUILDPLATFORM golang:1.26 AS build", "", "no exact Go release"},
		{"FROM golang:latest AS build", "", "want one golang:<version>"},
		{"FROM gcr.io/distroless/static", "", "want one golang:<version>"},
		{"FROM golang:1.26.8 AS a\nFROM golang:1.26.9 AS b", "", "want one golang:<version>"},
	}
	for _, tt := range tests {
		got, err := dockerfileGo(tt.dockerfile)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("dockerfileGo(%q) = %q, %v; want an error saying %q", tt.dockerfile, got, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("dockerfileGo(%q) = %q, %v; want %q", tt.dockerfile, got, err, tt.want)
		}
	}
	if v, err := goModGo("module m\n\ngo 1.26.8\n\nrequire x v1\n"); err != nil || v != "go1.26.8" {
		t.Errorf("goModGo = %q, %v; want go1.26.8", v, err)
	}
	if version.Compare("go1.26.7", "go1.26.8") >= 0 || version.Compare("go1.26.10", "go1.26.8") <= 0 {
		t.Error("go/version does not order patch releases numerically")
	}
}
