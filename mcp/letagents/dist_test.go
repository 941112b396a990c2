package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// distPlatforms are the platforms make dist builds for, as the docs list
// them: Linux, macOS and Windows on amd64 and arm64.
var distPlatforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"}

// moduleRoot is where the Makefile is.
const moduleRoot = "../.."

// TestDistPlatforms: make dist's default platforms are the six
// docs/mcp.md lists by their binaries' names, no more and no fewer
// (building all six here would take minutes; TestDist builds the host's).
func TestDistPlatforms(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(moduleRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^DIST_PLATFORMS \?= (.*)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("the Makefile sets no DIST_PLATFORMS ?= …")
	}
	if got := strings.Fields(string(m[1])); !slices.Equal(got, distPlatforms) {
		t.Errorf("DIST_PLATFORMS = %q; want %q", got, distPlatforms)
	}
	doc, err := os.ReadFile(filepath.Join(moduleRoot, "docs", "mcp.md"))
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile(`dist/letagents-([a-z]+)-([a-z0-9]+)`).FindAllStringSubmatch(string(doc), -1) {
		documented = append(documented, m[1]+"/"+m[2])
	}
	if !slices.Equal(documented, distPlatforms) {
		t.Errorf("docs/mcp.md lists the binaries of %q; want %q, as make dist builds them", documented, distPlatforms)
	}
}

// TestDist runs make dist for the host's platform alone: the binary is
// named as the docs say, SHA256SUMS holds its checksum, the version given
// is stamped into it, and it runs.
func TestDist(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make dist needs make: %v", err)
	}
	dir := t.TempDir()
	const version = "v0.0.0-disttest"
	platform := runtime.GOOS + "/" + runtime.GOARCH
	cmd := exec.CommandContext(context.Background(), "make", "-s", "dist", "DIST_PLATFORMS="+platform, "DIST_DIR="+dir, "VERSION="+version)
	cmd.Dir = moduleRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make dist: %v\n%s", err, out)
	}
	name := "letagents-" + runtime.GOOS + "-" + runtime.GOARCH
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	bin, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("make dist made no %s: %v", name, err)
	}
	sum := sha256.Sum256(bin)
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if want := hex.EncodeToString(sum[:]) + "  " + name + "\n"; string(sums) != want {
		t.Errorf("SHA256SUMS = %q; want %q", sums, want)
	}
	if !bytes.Contains(bin, []byte(version)) {
		t.Errorf("%s does not hold the version %s (-ldflags -X of mcp/server.Version)", name, version)
	}
	var stderr bytes.Buffer
	run := exec.Command(filepath.Join(dir, name), "--help")
	run.Stderr = &stderr
	if err := run.Run(); err != nil || !strings.Contains(stderr.String(), "usage: letagents") {
		t.Errorf("%s --help = %v, %q; want exit 0 and the usage", name, err, stderr.String())
	}
}
