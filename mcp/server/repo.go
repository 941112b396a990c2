package server

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/mcp/gitctx"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/rooms"
)

// repoTools are the tools that inspect a repository and name its room.
func (s *Server) repoTools() []mcpserver.ServerTool {
	return []mcpserver.ServerTool{
		bind(tool("check_repo", readOnly,
			"Inspect a directory: its git repository, .letagents.json, remote and branch, the room they lead to, and whether that is the room you are in.",
			cwdArg("The directory (default: the working directory).")),
			s.checkRepo),
		bind(tool("initialize_repo", writes,
			"Write .letagents.json at the repository's root naming its room (default: the repository room from origin), so every agent working "+
				"there meets in it, and join it. Never overwrites an existing file. Commit the file afterwards.",
			mcp.WithString("room", mcp.MaxLength(maxRoomID), mcp.Description("The room to name (default: the repository's).")),
			cwdArg("A directory inside the repository (default: the working directory).")),
			s.initializeRepo),
		bind(tool("check_repo_visibility", readOnly,
			"Ask the repository's host (GitHub, GitLab, Bitbucket; anonymously) whether the repository of a directory's origin remote is public "+
				"or private, and which kind of room suits it: discoverable for a public one, invite for a private or unknown one.",
			cwdArg("A directory inside the repository (default: the working directory).")),
			s.checkRepoVisibility),
	}
}

// checkRepoVisibility says whether the origin remote's repository is
// public, as its host tells anyone who asks.
func (s *Server) checkRepoVisibility(ctx context.Context, a repoArgs) *mcp.CallToolResult {
	key, ok := gitctx.RemoteRoom(s.detect(ctx, a.Cwd).Remote)
	if !ok {
		return fail("Not in a git repository or no remote configured", "Use create_room to create an invite room instead.")
	}
	return result(s.visibility.Check(ctx, key))
}

type repoArgs struct {
	Cwd string `json:"cwd"`
}

// checkRepo says what a directory tells about the room to join, and how
// that compares with the room this process is in.
func (s *Server) checkRepo(ctx context.Context, a repoArgs) *mcp.CallToolResult {
	c := s.detect(ctx, a.Cwd)
	status := "not_inside_git_repo"
	if c.RepoRoot != "" {
		status = "git_repo_detected"
	}
	current := s.currentID()
	scope, warning, hint := "none", "", ""
	switch {
	case current == "":
		hint = "Not in a room yet: call join_room with " + orDefault(c.Room, "a room name") + "."
	case current == c.Room:
		scope = "matches_detected_repo_context"
	default:
		scope = "existing_joined_session_not_derived_from_inspected_cwd"
		if c.Room != "" {
			warning = "You are in " + current + ", but this directory belongs to " + c.Room + "."
			hint = "To move, call join_room with " + c.Room + "."
		}
	}
	return result(map[string]any{
		"cwd": c.Dir, "repo_context_status": status, "git_repo_root": c.RepoRoot,
		"config_file": c.ConfigFile, "configured_room_from_file": c.ConfigRoom, "config_error": c.ConfigError,
		"git_remote": c.Remote, "derived_repo_room_from_git": c.RepoRoom, "derived_branch_room_from_git": c.BranchRoom,
		"git_current_branch": c.CurrentBranch, "git_default_branch": c.DefaultBranch,
		"detected_room_from_context": c.Room, "detected_room_source": c.Source,
		"current_room": current, "current_room_scope": scope, "warning": warning, "join_hint": hint,
	})
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

type initRepoArgs struct {
	Room string `json:"room"`
	Cwd  string `json:"cwd"`
}

// initializeRepo writes .letagents.json at the repository's root (never
// over an existing one) so every agent working there meets in the room,
// and joins it.
func (s *Server) initializeRepo(ctx context.Context, a initRepoArgs) *mcp.CallToolResult {
	c := s.detect(ctx, a.Cwd)
	if c.RepoRoot == "" {
		return fail("not inside a git repository", "Run this from a repository, or pass cwd.")
	}
	room := a.Room
	if room == "" {
		room = c.RepoRoom
	}
	if room == "" {
		return fail("no room to write: the repository has no origin remote", "Pass room (a room name or invite code).")
	}
	id, err := rooms.Normalize(room)
	if err != nil {
		return fail("room: "+err.Error(), "")
	}
	path, err := gitctx.WriteConfig(c.RepoRoot, id)
	if errors.Is(err, gitctx.ErrConfigExists) {
		return fail(err.Error(), "A .letagents.json already decides the room here (see check_repo).")
	}
	if err != nil {
		return fail("write "+filepath.Join(c.RepoRoot, gitctx.ConfigName)+": "+err.Error(), "")
	}
	// Joining follows the branch, as auto-join will.
	target := s.detect(ctx, c.Dir).Room
	if target == "" {
		target = id
	}
	ans := map[string]any{"success": true, "created": path, "room_id": id}
	j, needsAuth, err := s.join(ctx, target, state.JoinedViaConfig)
	switch {
	case err != nil:
		ans["joined"], ans["hint"] = false, "Written, but joining failed: "+err.Error()
	case needsAuth != nil:
		ans["joined"], ans["hint"], ans["pending_device_auth"] = false, needsAuth.Message, needsAuth.PendingDeviceAuth
	default:
		ans["joined"], ans["join"], ans["code"] = true, j, j.Code
		ans["hint"] = "Commit .letagents.json so other agents in this repository join " + id + " too."
	}
	return result(ans)
}
