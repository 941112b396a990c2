package gitctx

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/rooms"
)

// git runs a setup command in dir, isolated from the user's and the
// system's git configuration so the repositories are the same everywhere.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(),
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo creates dir as a git repository on branch main with one commit
// and, unless remote is "", an origin remote with that URL (never fetched).
func newRepo(t *testing.T, dir, remote string) string {
	t.Helper()
	mkdirs(t, dir)
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "config", "user.name", "Test")
	git(t, dir, "config", "user.email", "test@example.com")
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "init")
	if remote != "" {
		git(t, dir, "remote", "add", "origin", remote)
	}
	return dir
}

// setOriginHEAD makes refs/remotes/origin/HEAD point at origin/<branch>, as
// a clone would, so the default branch is known.
func setOriginHEAD(t *testing.T, dir, branch string) {
	t.Helper()
	git(t, dir, "update-ref", "refs/remotes/origin/"+branch, "HEAD")
	git(t, dir, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/"+branch)
}

// realPath resolves symlinks (macOS's /var -> /private/var) because git
// reports the resolved top-level directory.
func realPath(t *testing.T, path string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// detect runs Detect with the test's context and fails on error.
func detect(t *testing.T, dir string) Context {
	t.Helper()
	got, err := Detect(t.Context(), dir)
	if err != nil {
		t.Fatalf("Detect(%q) error = %v", dir, err)
	}
	return got
}

// branchRoom returns the branch room id the test expects, failing if
// BranchRoomID rejects the inputs.
func branchRoom(t *testing.T, repo, branch string) string {
	t.Helper()
	id, err := rooms.BranchRoomID(repo, branch)
	if err != nil {
		t.Fatalf("BranchRoomID(%q, %q) error = %v", repo, branch, err)
	}
	return id
}

// checkContext compares every field, so a test states the whole outcome.
func checkContext(t *testing.T, got, want Context) {
	t.Helper()
	if got != want {
		t.Errorf("Detect(%q):\n got  %+v\n want %+v", want.Dir, got, want)
	}
}

const (
	ghRemote = "git@github.com:BrosInCode/letagents.git"
	ghRoom   = "github.com/brosincode/letagents"
)

func TestDetectGitRemote(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		remote      string
		checkout    string // branch to create and switch to; "" stays on main
		detach      bool
		originHEAD  string // origin's default branch; "" leaves it unknown
		wantRepo    string
		wantCurrent string
		wantBranch  bool // whether the branch room is joined
	}{
		{"default branch", ghRemote, "", false, "main", ghRoom, "main", false},
		{"main without origin/HEAD", ghRemote, "", false, "", ghRoom, "main", false},
		{"feature branch keeps case", ghRemote, "Feature/Caps", false, "main", ghRoom, "Feature/Caps", true},
		{"feature branch without origin/HEAD", ghRemote, "Feature/Caps", false, "", ghRoom, "Feature/Caps", true},
		{"master without origin/HEAD", ghRemote, "master", false, "", ghRoom, "master", false},
		{"trunk without origin/HEAD", ghRemote, "trunk", false, "", ghRoom, "trunk", false},
		{"dev without origin/HEAD", ghRemote, "dev", false, "", ghRoom, "dev", true},
		{"Main is not main", ghRemote, "Main", false, "", ghRoom, "Main", true},
		{"main when origin/HEAD is develop", ghRemote, "", false, "develop", ghRoom, "main", true},
		{"develop when origin/HEAD is develop", ghRemote, "develop", false, "develop", ghRoom, "develop", false},
		{"master when origin/HEAD is main", ghRemote, "master", false, "main", ghRoom, "master", true},
		{"detached HEAD", ghRemote, "", true, "main", ghRoom, "", false},
		{"https remote", "https://github.com/Owner/Repo.git", "topic", false, "main", "github.com/owner/repo", "topic", true},
		{"ssh remote with port", "ssh://git@github.com:22/Owner/Repo.git", "topic", false, "main", "github.com/owner/repo", "topic", true},
		{"credentials dropped", "https://user:token@github.com/o/r.git", "", false, "main", "github.com/o/r", "main", false},
		{"gitlab has no branch rooms", "ssh://git@gitlab.com/team/project.git", "topic", false, "main", "gitlab.com/team/project", "topic", false},
		{"bitbucket has no branch rooms", "git@bitbucket.org:Team/Repo.git", "topic", false, "main", "bitbucket.org/Team/Repo", "topic", false},
		{"github enterprise has no branch rooms", "git@ghe.example.com:Org/Repo.git", "topic", false, "main", "ghe.example.com/Org/Repo", "topic", false},
		{"local path remote", "/srv/git/repo.git", "topic", false, "main", "", "topic", false},
		{"no remote", "", "topic", false, "", "", "topic", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := newRepo(t, t.TempDir(), tt.remote)
			if tt.originHEAD != "" {
				setOriginHEAD(t, dir, tt.originHEAD)
			}
			if tt.checkout != "" {
				git(t, dir, "switch", "-q", "-c", tt.checkout)
			}
			if tt.detach {
				git(t, dir, "switch", "-q", "--detach")
			}

			want := Context{
				Dir:           dir,
				RepoRoot:      realPath(t, dir),
				Remote:        tt.remote,
				RepoRoom:      tt.wantRepo,
				CurrentBranch: tt.wantCurrent,
				DefaultBranch: tt.originHEAD,
				Room:          tt.wantRepo,
			}
			if tt.wantRepo != "" {
				want.Source = SourceGitRemote
			}
			if tt.wantBranch {
				want.BranchRoom = branchRoom(t, tt.wantRepo, tt.wantCurrent)
				want.Room = want.BranchRoom
			}
			got := detect(t, dir)
			checkContext(t, got, want)

			if tt.wantBranch {
				locator, branch, ok := rooms.ParseBranchRoom(got.Room)
				if !ok || locator != tt.wantRepo || branch != tt.wantCurrent {
					t.Errorf("ParseBranchRoom(%q) = %q, %q, %v; want %q, %q, true",
						got.Room, locator, branch, ok, tt.wantRepo, tt.wantCurrent)
				}
			}
		})
	}
}

func TestDetectNestedDir(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, t.TempDir(), ghRemote)
	setOriginHEAD(t, repo, "main")
	git(t, repo, "switch", "-q", "-c", "Feature/Caps")
	nested := mkdirs(t, filepath.Join(repo, "a", "b", "c"))

	want := Context{
		Dir:           nested,
		RepoRoot:      realPath(t, repo),
		Remote:        ghRemote,
		RepoRoom:      ghRoom,
		CurrentBranch: "Feature/Caps",
		DefaultBranch: "main",
		BranchRoom:    branchRoom(t, ghRoom, "Feature/Caps"),
		Source:        SourceGitRemote,
	}
	want.Room = want.BranchRoom
	checkContext(t, detect(t, nested), want)
}

func TestDetectLinkedWorktree(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	repo := newRepo(t, filepath.Join(root, "repo"), ghRemote)
	setOriginHEAD(t, repo, "main")
	wt := filepath.Join(root, "wt")
	git(t, repo, "worktree", "add", "-q", "-b", "Fix/Wt", wt)
	nested := mkdirs(t, filepath.Join(wt, "pkg"))

	want := Context{
		Dir:           nested,
		RepoRoot:      realPath(t, wt),
		Remote:        ghRemote,
		RepoRoom:      ghRoom,
		CurrentBranch: "Fix/Wt",
		DefaultBranch: "main",
		BranchRoom:    branchRoom(t, ghRoom, "Fix/Wt"),
		Source:        SourceGitRemote,
	}
	want.Room = want.BranchRoom
	checkContext(t, detect(t, nested), want)

	// The main worktree stays on the default branch and its repo room.
	if got := detect(t, repo); got.Room != ghRoom {
		t.Errorf("Detect(main worktree).Room = %q, want %q", got.Room, ghRoom)
	}
}

func TestDetectConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		room       string // written to parent/.letagents.json
		checkout   string // branch in parent/repo; "" stays on main
		wantConfig string
		wantRepo   string
		wantBranch bool // whether the branch room is joined
		wantRoom   string
	}{
		{
			name: "named room wins over the remote", room: "team-lounge", checkout: "Feature/Caps",
			// The git fields still describe the remote.
			wantConfig: "team-lounge", wantRepo: ghRoom, wantRoom: "team-lounge",
		},
		{
			name: "invite code is normalised", room: "abcd-efgh-ijkl",
			wantConfig: "ABCD-EFGH-IJKL", wantRepo: ghRoom, wantRoom: "ABCD-EFGH-IJKL",
		},
		{
			name: "repo room on the default branch", room: "https://github.com/Cfg/Repo.git",
			wantConfig: "github.com/cfg/repo", wantRepo: "github.com/cfg/repo", wantRoom: "github.com/cfg/repo",
		},
		{
			name: "repo room on a feature branch", room: "github.com/Cfg/Repo", checkout: "Feature/Caps",
			wantConfig: "github.com/cfg/repo", wantRepo: "github.com/cfg/repo", wantBranch: true,
		},
		{
			name: "non-github repo room on a feature branch", room: "gitlab.com/Team/Project", checkout: "topic",
			wantConfig: "gitlab.com/Team/Project", wantRepo: "gitlab.com/Team/Project", wantRoom: "gitlab.com/Team/Project",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			configFile := filepath.Join(parent, ConfigName)
			writeFile(t, configFile, `{"room": "`+tt.room+`"}`)
			repo := newRepo(t, filepath.Join(parent, "repo"), ghRemote)
			setOriginHEAD(t, repo, "main")
			current := "main"
			if tt.checkout != "" {
				git(t, repo, "switch", "-q", "-c", tt.checkout)
				current = tt.checkout
			}

			want := Context{
				Dir:           repo,
				RepoRoot:      realPath(t, repo),
				ConfigFile:    configFile,
				ConfigRoom:    tt.wantConfig,
				Remote:        ghRemote,
				RepoRoom:      tt.wantRepo,
				CurrentBranch: current,
				DefaultBranch: "main",
				Room:          tt.wantRoom,
				Source:        SourceConfig,
			}
			if current != "main" && strings.HasPrefix(tt.wantRepo, "github.com/") {
				want.BranchRoom = branchRoom(t, tt.wantRepo, current)
			}
			if tt.wantBranch {
				want.Room = want.BranchRoom
			}
			got := detect(t, repo)
			checkContext(t, got, want)

			if tt.wantBranch {
				locator, branch, ok := rooms.ParseBranchRoom(got.Room)
				if !ok || locator != tt.wantRepo || branch != current {
					t.Errorf("ParseBranchRoom(%q) = %q, %q, %v; want %q, %q, true",
						got.Room, locator, branch, ok, tt.wantRepo, current)
				}
			}
		})
	}
}

func TestDetectConfigOutsideGit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		room, want string
	}{
		{"team-lounge", "team-lounge"},
		{"git@github.com:O/R.git", "github.com/o/r"},
	}
	for _, tt := range tests {
		t.Run(tt.room, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, ConfigName), `{"room": "`+tt.room+`"}`)
			want := Context{
				Dir:        dir,
				ConfigFile: filepath.Join(dir, ConfigName),
				ConfigRoom: tt.want,
				Room:       tt.want,
				Source:     SourceConfig,
			}
			if rooms.IsRepoLocator(tt.want) {
				want.RepoRoom = tt.want
			}
			checkContext(t, detect(t, dir), want)
		})
	}
}

func TestDetectUnusableConfigFallsBackToRemote(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, content, wantError string
	}{
		{"not json", `room: team`, "not valid JSON"},
		{"not an object", `["team"]`, "not a JSON object"},
		{"room missing", `{"name": "team"}`, `has no "room"`},
		{"room not a string", `{"room": 42}`, `"room" is not a string`},
		{"room empty", `{"room": ""}`, `"room" is empty`},
		{"room invalid", `{"room": "a//b"}`, "invalid room id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			// A valid config farther up must not be used instead: the
			// nearest file wins even when it is unusable.
			writeFile(t, filepath.Join(parent, ConfigName), `{"room": "far-room"}`)
			repo := newRepo(t, filepath.Join(parent, "repo"), ghRemote)
			setOriginHEAD(t, repo, "main")
			configFile := filepath.Join(repo, ConfigName)
			writeFile(t, configFile, tt.content)

			got := detect(t, repo)
			if !strings.Contains(got.ConfigError, tt.wantError) || got.ConfigError == "" {
				t.Errorf("ConfigError = %q, want it to contain %q", got.ConfigError, tt.wantError)
			}
			got.ConfigError = ""
			checkContext(t, got, Context{
				Dir:           repo,
				RepoRoot:      realPath(t, repo),
				ConfigFile:    configFile,
				Remote:        ghRemote,
				RepoRoom:      ghRoom,
				CurrentBranch: "main",
				DefaultBranch: "main",
				Room:          ghRoom,
				Source:        SourceGitRemote,
			})
		})
	}
}

func TestDetectNothing(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	missing := filepath.Join(t.TempDir(), "missing")
	for _, dir := range []string{empty, missing} {
		checkContext(t, detect(t, dir), Context{Dir: dir})
	}
}

func TestDetectCanceled(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, t.TempDir(), ghRemote)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	got, err := Detect(ctx, repo)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Detect with a canceled context error = %v, want context.Canceled", err)
	}
	if got.Room != "" || got.Source != "" {
		t.Errorf("Detect with a canceled context = %+v, want no room", got)
	}
}

// TestDetectWithoutGit cannot run in parallel: it changes PATH.
func TestDetectWithoutGit(t *testing.T) {
	repo := newRepo(t, t.TempDir(), ghRemote)
	setOriginHEAD(t, repo, "main")
	git(t, repo, "switch", "-q", "-c", "Feature/Caps")
	configured := t.TempDir()
	writeFile(t, filepath.Join(configured, ConfigName), `{"room": "team-lounge"}`)

	t.Setenv("PATH", t.TempDir())
	if _, err := exec.LookPath("git"); err == nil {
		t.Fatal("git still found on the emptied PATH")
	}

	checkContext(t, detect(t, repo), Context{Dir: repo})
	checkContext(t, detect(t, configured), Context{
		Dir:        configured,
		ConfigFile: filepath.Join(configured, ConfigName),
		ConfigRoom: "team-lounge",
		Room:       "team-lounge",
		Source:     SourceConfig,
	})
}

func TestDefaultBranch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ref, want string
	}{
		{"origin/main", "main"},
		{"origin/Feature/Caps", "Feature/Caps"},
		{"remotes/origin/main", "main"},
		{"refs/remotes/origin/main", "main"},
		{"upstream/main", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := defaultBranch(tt.ref); got != tt.want {
			t.Errorf("defaultBranch(%q) = %q, want %q", tt.ref, got, tt.want)
		}
	}
}
