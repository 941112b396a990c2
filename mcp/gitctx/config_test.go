package gitctx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/rooms"
)

// writeFile creates path's parent directories and writes content to it.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mkdirs creates dir and its parents and returns dir.
func mkdirs(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestFindConfigContents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		content     string
		wantRoom    string
		wantProblem string // substring; "" means usable
	}{
		{"named room", `{"room": "team-lounge"}`, "team-lounge", ""},
		{"invite code", `{"room": "abcd-efgh-ijkl"}`, "ABCD-EFGH-IJKL", ""},
		{"repo url", `{"room": "https://github.com/Owner/Repo.git"}`, "github.com/owner/repo", ""},
		{"extra fields", `{"room": "r", "note": 1}`, "r", ""},
		{"byte-order mark", "\uFEFF{\"room\": \"r\"}\n", "r", ""},
		{"not json", `room = "r"`, "", "not valid JSON"},
		{"empty file", ``, "", "not valid JSON"},
		{"trailing data", `{"room": "r"} {}`, "", "not valid JSON"},
		{"array", `["r"]`, "", "not a JSON object"},
		{"null", `null`, "", "not a JSON object"},
		{"string", `"r"`, "", "not a JSON object"},
		{"room missing", `{"name": "r"}`, "", `has no "room"`},
		{"room number", `{"room": 5}`, "", `"room" is not a string`},
		{"room null", `{"room": null}`, "", `"room" is not a string`},
		{"room empty", `{"room": ""}`, "", `"room" is empty`},
		{"room blank", `{"room": "  "}`, "", `"room" is empty`},
		{"room invalid", `{"room": "a//b"}`, "", "invalid room id"},
		{"room control", `{"room": "a\u0000b"}`, "", "invalid room id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			wantPath := filepath.Join(dir, ConfigName)
			writeFile(t, wantPath, tt.content)

			path, room, problem := FindConfig(dir)
			if path != wantPath {
				t.Errorf("path = %q, want %q", path, wantPath)
			}
			if room != tt.wantRoom {
				t.Errorf("room = %q, want %q", room, tt.wantRoom)
			}
			switch {
			case tt.wantProblem == "" && problem != "":
				t.Errorf("problem = %q, want none", problem)
			case !strings.Contains(problem, tt.wantProblem):
				t.Errorf("problem = %q, want it to contain %q", problem, tt.wantProblem)
			}
		})
	}
}

func TestFindConfigSearch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		files    map[string]string // relative path -> content
		from     string            // relative directory to search from
		wantPath string            // relative; "" means none found
		wantRoom string
		wantBad  bool
	}{
		{
			name:     "in dir",
			files:    map[string]string{"a/" + ConfigName: `{"room":"r"}`},
			from:     "a",
			wantPath: "a/" + ConfigName, wantRoom: "r",
		},
		{
			name:     "in ancestor",
			files:    map[string]string{ConfigName: `{"room":"r"}`},
			from:     "a/b/c",
			wantPath: ConfigName, wantRoom: "r",
		},
		{
			name: "nearest wins",
			files: map[string]string{
				ConfigName:          `{"room":"far"}`,
				"a/b/" + ConfigName: `{"room":"near"}`,
			},
			from:     "a/b/c",
			wantPath: "a/b/" + ConfigName, wantRoom: "near",
		},
		{
			name: "nearest wins even when unusable",
			files: map[string]string{
				ConfigName:        `{"room":"far"}`,
				"a/" + ConfigName: `{"room":""}`,
			},
			from:     "a/b",
			wantPath: "a/" + ConfigName, wantBad: true,
		},
		{
			name:     "a directory named like the config is found and unusable",
			files:    map[string]string{ConfigName + "/x": ``},
			from:     "a",
			wantPath: ConfigName, wantBad: true,
		},
		{
			name:  "none in a sibling",
			files: map[string]string{"b/" + ConfigName: `{"room":"r"}`},
			from:  "a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			for rel, content := range tt.files {
				writeFile(t, filepath.Join(root, rel), content)
			}
			from := mkdirs(t, filepath.Join(root, tt.from))
			wantPath := ""
			if tt.wantPath != "" {
				wantPath = filepath.Join(root, tt.wantPath)
			}

			path, room, problem := FindConfig(from)
			if path != wantPath {
				t.Errorf("path = %q, want %q", path, wantPath)
			}
			if room != tt.wantRoom {
				t.Errorf("room = %q, want %q", room, tt.wantRoom)
			}
			if gotBad := problem != ""; gotBad != tt.wantBad {
				t.Errorf("problem = %q, want a problem: %v", problem, tt.wantBad)
			}
		})
	}
}

func TestFindConfigDepthLimit(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, ConfigName), `{"room":"r"}`)
	dir := root
	for range maxConfigLevels {
		dir = filepath.Join(dir, "d")
	}
	mkdirs(t, dir)
	tests := []struct {
		name  string
		up    int // levels between the search start and root
		found bool
	}{
		{"root is the 50th directory examined", maxConfigLevels - 1, true},
		{"root is the 51st directory examined", maxConfigLevels, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			from := filepath.Join(root, strings.Repeat("d"+string(filepath.Separator), tt.up))
			path, _, _ := FindConfig(from)
			if got := path != ""; got != tt.found {
				t.Errorf("FindConfig %d levels below the config: path = %q, want found: %v", tt.up, path, tt.found)
			}
		})
	}
}

func TestFindConfigRelativeDir(t *testing.T) {
	t.Parallel()
	// "." resolves against the working directory (the package directory,
	// which has no config) and must come back as an absolute path if any.
	path, _, _ := FindConfig(".")
	if path != "" && !filepath.IsAbs(path) {
		t.Errorf("FindConfig(\".\") path = %q, want absolute", path)
	}
}

func TestWriteConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		room, want string
	}{
		{"team-lounge", `{"room":"team-lounge"}` + "\n"},
		{"abcd-efgh-ijkl", `{"room":"ABCD-EFGH-IJKL"}` + "\n"},
		{"git@github.com:Owner/Repo.git", `{"room":"github.com/owner/repo"}` + "\n"},
		{"R&D <team>", `{"room":"R&D <team>"}` + "\n"},
		{`say "hi"`, `{"room":"say \"hi\""}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.room, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path, err := WriteConfig(dir, tt.room)
			if err != nil {
				t.Fatalf("WriteConfig(%q) error = %v", tt.room, err)
			}
			if want := filepath.Join(dir, ConfigName); path != want {
				t.Errorf("path = %q, want %q", path, want)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(data); got != tt.want {
				t.Errorf("contents = %q, want %q", got, tt.want)
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if perm := info.Mode().Perm(); perm&^0o644 != 0 || perm&0o600 != 0o600 {
				t.Errorf("mode = %v, want 0644 less the umask", perm)
			}
			want, _ := rooms.Normalize(tt.room)
			if _, room, problem := FindConfig(dir); room != want || problem != "" {
				t.Errorf("FindConfig after write = %q, %q; want %q, no problem", room, problem, want)
			}
		})
	}
}

func TestWriteConfigRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		existing string // relative path of an existing config; "" for none
		content  string
		in       string // relative directory to write in
		room     string
		wantErr  error
	}{
		{"existing in dir", ConfigName, `{"room":"old"}`, "", "new", ErrConfigExists},
		{"existing unusable in dir", ConfigName, `junk`, "", "new", ErrConfigExists},
		{"existing in ancestor", ConfigName, `{"room":"old"}`, "a/b", "new", ErrConfigExists},
		{"invalid room", "", "", "", "a//b", rooms.ErrInvalid},
		{"empty room", "", "", "", "", rooms.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			if tt.existing != "" {
				writeFile(t, filepath.Join(root, tt.existing), tt.content)
			}
			dir := mkdirs(t, filepath.Join(root, tt.in))

			path, err := WriteConfig(dir, tt.room)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("WriteConfig error = %v, want %v", err, tt.wantErr)
			}
			if path != "" {
				t.Errorf("path = %q, want \"\"", path)
			}
			if tt.existing != "" {
				data, err := os.ReadFile(filepath.Join(root, tt.existing))
				if err != nil || string(data) != tt.content {
					t.Errorf("existing config = %q, %v; want %q unchanged", data, err, tt.content)
				}
			}
			if tt.in != "" || tt.existing == "" {
				if _, err := os.Stat(filepath.Join(dir, ConfigName)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("config in %s: stat error = %v, want not exist", dir, err)
				}
			}
		})
	}
}

func TestWriteConfigMissingDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "missing")
	if path, err := WriteConfig(dir, "r"); err == nil || errors.Is(err, ErrConfigExists) {
		t.Errorf("WriteConfig in a missing directory = %q, %v; want an error other than ErrConfigExists", path, err)
	}
}
