// Package gitctx owns the repository context of a working directory: which
// room an agent started there should join, from a .letagents.json pinned in
// the tree or else from the git remote and the checked-out branch.
package gitctx

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/letagents/letagents-go/shared/rooms"
)

// Sources of Context.Room.
const (
	SourceConfig    = "config"
	SourceGitRemote = "git-remote"
)

// gitTimeout bounds each git command so a hung git (a network file system,
// a lock) cannot stall the agent's start-up.
const gitTimeout = 5 * time.Second

// Context is what a working directory tells about the room to join.
type Context struct {
	Dir           string // the directory inspected (absolute)
	RepoRoot      string // `git rev-parse --show-toplevel`, "" outside a git repo
	ConfigFile    string // path of the .letagents.json found, "" if none
	ConfigRoom    string // its "room", normalised (rooms.Normalize), "" if none or unusable
	ConfigError   string // why a found config file was not usable ("" if fine or none)
	Remote        string // `git remote get-url origin` as printed, "" if none
	RepoRoom      string // host/owner/repo from the config when repo-shaped, else from the remote; "" if none
	CurrentBranch string // `git branch --show-current`, "" when detached or outside git
	DefaultBranch string // origin/HEAD's branch without "origin/", "" if unknown
	BranchRoom    string // the branch Git Room id when RepoRoom is on github.com and the current branch is not the default one, else ""
	Room          string // the room to join: see Detect
	Source        string // SourceConfig, SourceGitRemote, or "" when nothing was found
}

// Detect inspects dir ("" is the current directory) and decides the room to
// join, in this order:
//
//  1. A usable .letagents.json found by FindConfig (the nearest one; an
//     unusable nearest file sets ConfigError and counts as no config).
//     A repo-locator room (host/owner/repo) goes through branch routing;
//     any other room (named, invite, branch room) is joined as is.
//     Source is "config".
//  2. Otherwise origin's URL, if RemoteRoom makes a repo room of it, goes
//     through branch routing. Source is "git-remote".
//  3. Otherwise Room and Source are "".
//
// Branch routing joins the branch Git Room (rooms.BranchRoomID) when the
// repo room is on github.com, a branch is checked out, and that branch is
// not the default one: origin/HEAD's branch when known, else any branch
// other than main, master and trunk. Otherwise, and for hosts other than
// github.com, it joins the repo room. Branch names are compared exactly.
//
// The git fields are filled whatever the source, so a caller can show them;
// with a non-repo config room, RepoRoom and BranchRoom describe the remote
// and Room is still the config room.
//
// Each git command runs in dir with a 5 s timeout, no terminal prompt and no
// pager. A failing git (not a repository, no origin, git not installed)
// leaves its fields empty: the error is non-nil only when ctx ends.
func Detect(ctx context.Context, dir string) (Context, error) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	c := Context{Dir: dir}
	if err := ctx.Err(); err != nil {
		return c, fmt.Errorf("detect room for %s: %w", dir, err)
	}

	c.ConfigFile, c.ConfigRoom, c.ConfigError = FindConfig(dir)

	git := func(args ...string) string { return runGit(ctx, dir, args...) }
	if top := git("rev-parse", "--show-toplevel"); top != "" {
		c.RepoRoot = filepath.Clean(filepath.FromSlash(top))
	}
	c.Remote = git("remote", "get-url", "origin")
	c.CurrentBranch = git("branch", "--show-current")
	c.DefaultBranch = defaultBranch(git("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"))
	if err := ctx.Err(); err != nil {
		// The git fields may be empty only because ctx ended; do not
		// present a half-filled context as the answer.
		return Context{Dir: dir}, fmt.Errorf("detect room for %s: %w", dir, err)
	}

	configRepo := c.ConfigRoom != "" && rooms.IsRepoLocator(c.ConfigRoom)
	if configRepo {
		c.RepoRoom = c.ConfigRoom
	} else if room, ok := RemoteRoom(c.Remote); ok {
		c.RepoRoom = room
	}
	if c.RepoRoom != "" && onBranch(c.CurrentBranch, c.DefaultBranch) {
		// BranchRoomID rejects hosts other than github.com, and branch
		// names it cannot encode; both mean "stay in the repo room".
		if id, err := rooms.BranchRoomID(c.RepoRoom, c.CurrentBranch); err == nil {
			c.BranchRoom = id
		}
	}
	repoChoice := c.RepoRoom
	if c.BranchRoom != "" {
		repoChoice = c.BranchRoom
	}

	switch {
	case c.ConfigRoom != "" && !configRepo:
		c.Room, c.Source = c.ConfigRoom, SourceConfig
	case c.ConfigRoom != "":
		c.Room, c.Source = repoChoice, SourceConfig
	case c.RepoRoom != "":
		c.Room, c.Source = repoChoice, SourceGitRemote
	}
	return c, nil
}

// onBranch reports whether current is a branch that gets its own room.
func onBranch(current, defaultBranch string) bool {
	if current == "" {
		return false
	}
	if defaultBranch != "" {
		return current != defaultBranch
	}
	switch current {
	case "main", "master", "trunk":
		return false
	}
	return true
}

// defaultBranch turns origin/HEAD's short name into a branch name. --short
// prints "remotes/origin/x" (or the full ref) instead of "origin/x" when a
// local ref makes the short form ambiguous, so those prefixes go too; a
// target outside origin is not origin's default branch.
func defaultBranch(ref string) string {
	ref = strings.TrimPrefix(ref, "refs/")
	ref = strings.TrimPrefix(ref, "remotes/")
	branch, ok := strings.CutPrefix(ref, "origin/")
	if !ok {
		return ""
	}
	return branch
}

// runGit returns git's standard output without the trailing newline, or ""
// when git fails for any reason.
func runGit(ctx context.Context, dir string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"--no-pager"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(),
		"GIT_TERMINAL_PROMPT=0",
		"GIT_PAGER=cat",
		// Read-only queries must not take locks that could make the
		// user's own concurrent git commands fail.
		"GIT_OPTIONAL_LOCKS=0",
	)
	// A grandchild holding stdout open must not outlive the timeout.
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimRight(string(out), "\r\n")
}
