package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/actors"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/testwait"
	"github.com/letagents/letagents-go/shared/wire"
)

// wantTools is every tool an agent should be offered.
var wantTools = []string{
	"add_task", "approve_board_intent", "check_repo", "check_repo_visibility", "claim_task", "claim_task_review", "clear_saved_auth", "complete_task",
	"create_project", "create_room", "deny_board_intent", "disconnect_agent_session", "get_board", "get_board_settings",
	"get_current_room", "get_onboarding_status", "get_room_artifacts", "get_room_events", "handoff_task_lease", "initialize_repo", "join_code",
	"join_project", "join_room", "list_board_intents", "pin_message", "poll_device_auth", "post_reasoning", "post_status", "publish_room_artifact", "read_messages",
	"register_agent_session", "register_board_intent", "register_task_claim_intent", "register_task_close_intent",
	"register_task_create_intent", "register_task_lease_action_intent", "release_task_lease", "release_task_review",
	"resume_room_session", "search_messages", "send_message", "send_thread_message", "set_agent_name", "set_board_manager_mode", "start_device_auth",
	"start_local_codex_session", "status_local_codex_session", "stop_local_codex_session", "update_task", "wait_for_messages",
}

const appRoom = "github.com/acme/app"

// TestTwoAgentsMeetAcrossWorktrees: two agents in two worktrees of one
// public repository land in the repository room and the branch room, meet
// in the repository room, wake each other with messages, answer in a
// thread and share a pull request.
func TestTwoAgentsMeetAcrossWorktrees(t *testing.T) {
	t.Parallel()
	r := startRunner(t)
	r.GitHub.AddRepo("acme/app", false)

	repoMain := newRepo(t, "git@github.com:Acme/App.git")
	repoMain.git(t, "branch", "Feature/Login")
	featureDir := filepath.Join(t.TempDir(), "feature")
	repoMain.git(t, "worktree", "add", featureDir, "Feature/Login")

	a := startAgent(t, r.URL, agentConfig{Name: "alpha", Dir: repoMain.Dir})
	b := startAgent(t, r.URL, agentConfig{Name: "bravo", Dir: featureDir})

	for _, ag := range []*agent{a, b} {
		got := ag.toolNames(t)
		t.Logf("tools/list as agent %s sees it: %s", ag.name, strings.Join(got, ", "))
		sorted := slices.Sorted(slices.Values(got))
		if !slices.Equal(sorted, wantTools) {
			t.Errorf("agent %s: tools/list = %v, want %v", ag.name, sorted, wantTools)
		}
	}

	branchRoom, err := rooms.BranchRoomID(appRoom, "Feature/Login")
	if err != nil {
		t.Fatalf("BranchRoomID: %v", err)
	}
	curA := a.waitJoined(t)
	if curA.RoomID != appRoom {
		t.Errorf("agent alpha (default branch) auto-joined %q, want %q", curA.RoomID, appRoom)
	}
	curB := b.waitJoined(t)
	if curB.RoomID != branchRoom {
		t.Errorf("agent bravo (Feature/Login) auto-joined %q, want the branch room %q", curB.RoomID, branchRoom)
	}

	var repoB struct {
		Status        string `json:"repo_context_status"`
		RepoRoom      string `json:"derived_repo_room_from_git"`
		BranchRoom    string `json:"derived_branch_room_from_git"`
		CurrentBranch string `json:"git_current_branch"`
		DefaultBranch string `json:"git_default_branch"`
		Detected      string `json:"detected_room_from_context"`
		Current       string `json:"current_room"`
		Scope         string `json:"current_room_scope"`
	}
	b.callOK(t, "check_repo", nil, &repoB)
	for _, c := range []struct{ field, got, want string }{
		{"repo_context_status", repoB.Status, "git_repo_detected"},
		{"derived_repo_room_from_git", repoB.RepoRoom, appRoom},
		{"derived_branch_room_from_git", repoB.BranchRoom, branchRoom},
		{"git_current_branch", repoB.CurrentBranch, "Feature/Login"},
		{"git_default_branch", repoB.DefaultBranch, "main"},
		{"detected_room_from_context", repoB.Detected, branchRoom},
		{"current_room", repoB.Current, branchRoom},
		{"current_room_scope", repoB.Scope, "matches_detected_repo_context"},
	} {
		if c.got != c.want {
			t.Errorf("bravo's check_repo: %s = %q, want %q", c.field, c.got, c.want)
		}
	}

	var joined struct {
		RoomID    string `json:"room_id"`
		JoinedVia string `json:"joined_via"`
	}
	b.callOK(t, "join_room", map[string]any{"name": appRoom}, &joined)
	if joined.RoomID != appRoom || joined.JoinedVia != "join_room" {
		t.Errorf("bravo's join_room(%s) answered room %q via %q, want %q via join_room", appRoom, joined.RoomID, joined.JoinedVia, appRoom)
	}
	curB = b.waitJoined(t)
	if curB.RoomID != appRoom {
		t.Fatalf("after join_room, bravo's get_current_room says %q, want %q", curB.RoomID, appRoom)
	}
	bravoLabel := curB.AgentIdentity.ActorLabel
	if !strings.Contains(bravoLabel, "bravo") {
		t.Errorf("bravo's actor label %q does not contain its name", bravoLabel)
	}

	// The room is empty: a wait without a cursor blocks until a message comes.
	first := a.callAsync("wait_for_messages", map[string]any{"timeout": waitMillis}, 2*waitMillis*time.Millisecond)
	stillBlocked(t, first, "alpha's wait_for_messages (no cursor, empty room)")
	hello := b.send(t, "hello from bravo")
	var woke messagesAnswer
	awaitAnswer(t, first, "alpha's wait_for_messages (no cursor, empty room)", &woke)
	checkOnly(t, "alpha's first wait", woke, hello.Message)

	// Without a cursor and with history, the tail comes back at once.
	var tail messagesAnswer
	a.callOK(t, "wait_for_messages", map[string]any{"timeout": waitMillis}, &tail)
	checkOnly(t, "alpha's tail", tail, hello.Message)
	if tail.LastObservedMessageID != hello.ID {
		t.Errorf("alpha's tail: last_observed_message_id = %q, want %q", tail.LastObservedMessageID, hello.ID)
	}

	// With the cursor, the wait blocks until bravo speaks again.
	next := a.callAsync("wait_for_messages", map[string]any{"after_message_id": tail.LastObservedMessageID, "timeout": waitMillis},
		2*waitMillis*time.Millisecond)
	stillBlocked(t, next, "alpha's wait_for_messages(after "+tail.LastObservedMessageID+")")
	question := b.send(t, "who takes the login form?")
	if question.Sender != bravoLabel {
		t.Errorf("bravo's message was sent as %q, want its actor label %q", question.Sender, bravoLabel)
	}
	awaitAnswer(t, next, "alpha's wait_for_messages(after "+tail.LastObservedMessageID+")", &woke)
	checkOnly(t, "alpha's wait after the cursor", woke, question.Message)
	if len(woke.Messages) == 1 && woke.Messages[0].Sender != bravoLabel {
		t.Errorf("alpha saw the message from %q, want bravo's actor label %q", woke.Messages[0].Sender, bravoLabel)
	}

	var reply sentMessage
	a.callOK(t, "send_thread_message", map[string]any{"text": "alpha takes it", "thread_parent_id": question.ID}, &reply)
	if reply.ThreadParentID == nil || *reply.ThreadParentID != question.ID || reply.ThreadRootID != question.ID {
		t.Errorf("alpha's reply: thread_parent_id %v, thread_root_id %q; want both %q", reply.ThreadParentID, reply.ThreadRootID, question.ID)
	}
	var answered messagesAnswer
	b.callOK(t, "wait_for_messages", map[string]any{"after_message_id": question.ID, "timeout": waitMillis}, &answered)
	checkOnly(t, "bravo's wait after its question", answered, reply.Message)
	if len(answered.Messages) == 1 {
		got := answered.Messages[0]
		if got.ThreadRootID != question.ID {
			t.Errorf("bravo got the reply with thread_root_id %q, want %q", got.ThreadRootID, question.ID)
		}
		if got.Sender != curA.AgentIdentity.ActorLabel || !strings.Contains(got.Sender, "alpha") {
			t.Errorf("bravo got the reply from %q, want alpha's actor label %q", got.Sender, curA.AgentIdentity.ActorLabel)
		}
	}

	const prURL = "https://github.com/acme/app/pull/1"
	var published struct {
		Success  bool          `json:"success"`
		RoomID   string        `json:"room_id"`
		Artifact wire.Artifact `json:"artifact"`
	}
	b.callOK(t, "publish_room_artifact", map[string]any{
		"artifact": map[string]any{"kind": "pull_request", "url": prURL},
		"task_id":  "task_1",
	}, &published)
	if !published.Success || published.RoomID != appRoom || published.Artifact.Kind != "pull_request" {
		t.Errorf("publish_room_artifact answered success %v room %q kind %q, want true %q pull_request",
			published.Success, published.RoomID, published.Artifact.Kind, appRoom)
	}
	for _, task := range []string{"", "task_1"} {
		args := map[string]any{}
		if task != "" {
			args["task_id"] = task
		}
		var list struct {
			Success   bool            `json:"success"`
			RoomID    string          `json:"room_id"`
			Artifacts []wire.Artifact `json:"artifacts"`
		}
		a.callOK(t, "get_room_artifacts", args, &list)
		if len(list.Artifacts) != 1 {
			t.Errorf("alpha's get_room_artifacts(%v): %d artifacts, want the pull request only", args, len(list.Artifacts))
			continue
		}
		got := list.Artifacts[0]
		if got.Kind != "pull_request" || got.URL == nil || *got.URL != prURL || got.Provider != "github" ||
			!slices.Contains(got.LinkedTaskIDs, "task_1") || got.RoomID != appRoom {
			t.Errorf("alpha's get_room_artifacts(%v) = %+v, want the github pull_request %s of %s linked to task_1", args, got, prURL, appRoom)
		}
	}
}

// checkOnly wants a messages answer holding exactly want.
func checkOnly(t *testing.T, what string, got messagesAnswer, want wire.Message) {
	t.Helper()
	if got.RoomID != want.RoomID {
		t.Errorf("%s: room_id %q, want %q", what, got.RoomID, want.RoomID)
	}
	ids := make([]string, len(got.Messages))
	for i, m := range got.Messages {
		ids[i] = m.ID
	}
	if len(got.Messages) != 1 || got.Messages[0].ID != want.ID || got.Messages[0].Text != want.Text {
		t.Errorf("%s: messages %v (timed_out %v), want only %s %q", what, ids, got.TimedOut, want.ID, want.Text)
	}
}

// TestRestartResumesSavedRoom: an agent restarted outside any repository,
// with the same state file, is back in the room it was in and resumes
// from the last message it had seen.
func TestRestartResumesSavedRoom(t *testing.T) {
	t.Parallel()
	r := startRunner(t)
	r.GitHub.AddRepo("acme/app", false)
	repoA := newRepo(t, "git@github.com:acme/app.git")
	statePath := filepath.Join(t.TempDir(), "alpha-state.json")

	a := startAgent(t, r.URL, agentConfig{Name: "alpha", Dir: repoA.Dir, StatePath: statePath})
	before := a.waitJoined(t)
	if before.RoomID != appRoom {
		t.Fatalf("alpha auto-joined %q, want %q", before.RoomID, appRoom)
	}
	b := startAgent(t, r.URL, agentConfig{Name: "bravo", Dir: t.TempDir()})
	b.callOK(t, "join_room", map[string]any{"name": appRoom}, &struct{}{})

	one := a.send(t, "one")
	two := b.send(t, "two")
	var seen messagesAnswer
	a.callOK(t, "wait_for_messages", nil, &seen)
	if seen.LastObservedMessageID != two.ID || len(seen.Messages) != 2 || seen.Messages[0].ID != one.ID {
		t.Fatalf("alpha's tail: %d messages, last observed %q; want %s and %s, last %s", len(seen.Messages), seen.LastObservedMessageID, one.ID, two.ID, two.ID)
	}

	a.close(t)
	st := readState(t, statePath)
	if st.CurrentRoom != appRoom || st.RoomSessions[appRoom].LastMessageID != two.ID {
		t.Errorf("state file after alpha stopped: current_room %q, last_message_id %q; want %q and %q",
			st.CurrentRoom, st.RoomSessions[appRoom].LastMessageID, appRoom, two.ID)
	}
	three := b.send(t, "three, while alpha is away")

	outside := t.TempDir()
	a2 := startAgent(t, r.URL, agentConfig{Name: "alpha", Dir: outside, StatePath: statePath})
	after := a2.waitJoined(t)
	if after.RoomID != appRoom {
		t.Errorf("restarted alpha auto-joined %q, want the saved room %q", after.RoomID, appRoom)
	}
	// The same agent: same runtime key and name. (The owner part of the
	// actor label is not compared: it comes from the working directory's
	// git user.name, which the directory outside the repository lacks.)
	if after.AgentIdentity.RuntimeKey != before.AgentIdentity.RuntimeKey || after.AgentIdentity.Name != before.AgentIdentity.Name {
		t.Errorf("restarted alpha is %+v, want the runtime key and name of %+v", after.AgentIdentity, before.AgentIdentity)
	}
	var where struct {
		Status string `json:"repo_context_status"`
		Room   string `json:"detected_room_from_context"`
	}
	a2.callOK(t, "check_repo", nil, &where)
	if where.Status != "not_inside_git_repo" || where.Room != "" {
		t.Fatalf("the restart directory %s is not outside every repository: check_repo says %q, room %q", outside, where.Status, where.Room)
	}

	var resumed struct {
		Success                    bool   `json:"success"`
		RejoinedFromLocalState     bool   `json:"rejoined_from_local_state"`
		LastMessageIDBeforeRestart string `json:"last_message_id_before_restart"`
		Room                       struct {
			RoomID string `json:"room_id"`
		} `json:"room"`
	}
	a2.callOK(t, "resume_room_session", nil, &resumed)
	if !resumed.Success || !resumed.RejoinedFromLocalState || resumed.Room.RoomID != appRoom {
		t.Errorf("resume_room_session: success %v, rejoined_from_local_state %v, room %q; want true, true, %q",
			resumed.Success, resumed.RejoinedFromLocalState, resumed.Room.RoomID, appRoom)
	}
	if resumed.LastMessageIDBeforeRestart != two.ID {
		t.Errorf("resume_room_session: last_message_id_before_restart = %q, want %q (the last message alpha saw)",
			resumed.LastMessageIDBeforeRestart, two.ID)
	}

	// Catch up from where alpha was (two.ID, checked above as the resumed cursor).
	var caughtUp messagesAnswer
	a2.callOK(t, "wait_for_messages", map[string]any{"after_message_id": two.ID, "timeout": waitMillis}, &caughtUp)
	checkOnly(t, "restarted alpha catching up", caughtUp, three.Message)

	st = readState(t, statePath)
	if st.CurrentRoom != appRoom || st.RoomSessions[appRoom].LastMessageID != three.ID {
		t.Errorf("state file after catching up: current_room %q, last_message_id %q; want %q and %q",
			st.CurrentRoom, st.RoomSessions[appRoom].LastMessageID, appRoom, three.ID)
	}
}

// savedState is what the test reads of a state file.
type savedState struct {
	CurrentRoom  string `json:"current_room"`
	RoomSessions map[string]struct {
		RoomID        string `json:"room_id"`
		LastMessageID string `json:"last_message_id"`
	} `json:"room_sessions"`
}

// readState reads a state file, wanting valid JSON with current_room and
// room_sessions.
func readState(t *testing.T, path string) savedState {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the state file: %v", err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatalf("the state file is not a JSON object (%v):\n%s", err, raw)
	}
	for _, k := range []string{"current_room", "room_sessions"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("the state file has no %q:\n%s", k, raw)
		}
	}
	var st savedState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("the state file does not decode (%v):\n%s", err, raw)
	}
	return st
}

// TestPrivateRepoSignIn: an agent in a private repository's clone needs
// GitHub sign-in to get in; once its human approves the device code it
// joins and speaks as the signed-in account's agent, and after forgetting
// the sign-in it is asked to sign in again.
func TestPrivateRepoSignIn(t *testing.T) {
	t.Parallel()
	const secretRoom = "github.com/acme/secret"
	r := startRunner(t)
	gh := r.GitHub
	gh.SetDeviceTiming(time.Second, 10*time.Minute)
	ann := gh.AddUser("ann")
	gh.AddRepo("acme/secret", true)
	gh.Grant("acme/secret", "ann", "write")
	repoC := newRepo(t, "https://github.com/acme/secret.git")

	c := startAgent(t, r.URL, agentConfig{Name: "charlie", Dir: repoC.Dir})

	// The auto-join is refused for want of sign-in and starts a device flow.
	var status onboarding
	testwait.Until(t, "a pending device sign-in after start", func() bool {
		c.callOK(t, "get_onboarding_status", nil, &status)
		return status.PendingDeviceAuth != nil
	})
	code := gh.LastUserCode()
	if code == "" || status.PendingDeviceAuth.UserCode != code {
		t.Errorf("pending_device_auth.user_code = %q, want the fake GitHub's last code %q", status.PendingDeviceAuth.UserCode, code)
	}
	if status.NextStep != "poll_device_auth" || status.Authenticated || status.DetectedRoom != secretRoom ||
		status.PendingDeviceAuth.SuggestedRoomID != secretRoom {
		t.Errorf("onboarding status = %+v (pending %+v), want next_step poll_device_auth, not authenticated, detected and suggested room %s",
			status, *status.PendingDeviceAuth, secretRoom)
	}
	var cur currentRoom
	c.callOK(t, "get_current_room", nil, &cur)
	if cur.Connected {
		t.Errorf("get_current_room before sign-in: connected to %q, want not connected", cur.RoomID)
	}

	gh.ApproveDevice(code, "ann")
	var authorized struct {
		Success        bool   `json:"success"`
		Status         string `json:"status"`
		Interval       int    `json:"interval"`
		AutoJoinedRoom string `json:"auto_joined_room"`
		Account        struct {
			Login string `json:"login"`
		} `json:"account"`
		AgentIdentity identityJSON `json:"agent_identity"`
	}
	// Paced as the device flow asks, bounded as testwait bounds a wait.
	deadline := time.Now().Add(testwait.Bound)
	for {
		authorized.Status, authorized.Interval = "", 0
		c.callOK(t, "poll_device_auth", nil, &authorized)
		if authorized.Status != "pending" && authorized.Status != "slow_down" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("poll_device_auth still %q %v after approval", authorized.Status, testwait.Bound)
		}
		time.Sleep(time.Duration(max(authorized.Interval, 1)) * time.Second)
	}
	if !authorized.Success || authorized.Status != "authorized" || authorized.AutoJoinedRoom != secretRoom || authorized.Account.Login != "ann" {
		t.Fatalf("poll_device_auth: success %v status %q auto_joined_room %q account %q; want true, authorized, %q, ann",
			authorized.Success, authorized.Status, authorized.AutoJoinedRoom, authorized.Account.Login, secretRoom)
	}

	c.callOK(t, "get_current_room", nil, &cur)
	if !cur.Connected || cur.RoomID != secretRoom || cur.Auth == nil || cur.Auth.Source != "local_state" {
		t.Errorf("get_current_room after sign-in: connected %v room %q auth %+v; want %q with the saved sign-in", cur.Connected, cur.RoomID, cur.Auth, secretRoom)
	}
	said := c.send(t, "signed in as ann's agent")
	if said.RoomID != secretRoom {
		t.Errorf("the message went to %q, want %q", said.RoomID, secretRoom)
	}
	display, owner, _ := actors.ParseActorLabel(said.Sender)
	if display != "charlie" || owner != ann.Name {
		t.Errorf("sender %q: display %q owner %q, want charlie owned by %q (ann's GitHub name)", said.Sender, display, owner, ann.Name)
	}
	if said.AgentIdentity.CanonicalKey != "ann/charlie" {
		t.Errorf("agent_identity.canonical_key = %q, want ann/charlie", said.AgentIdentity.CanonicalKey)
	}

	var cleared struct {
		Success bool `json:"success"`
	}
	c.callOK(t, "clear_saved_auth", nil, &cleared)
	if !cleared.Success {
		t.Errorf("clear_saved_auth: success false")
	}
	ans := c.call(t, "join_room", map[string]any{"name": secretRoom})
	var refused struct {
		Success           *bool              `json:"success"`
		Error             string             `json:"error"`
		RoomID            string             `json:"room_id"`
		NextStep          string             `json:"next_step"`
		PendingDeviceAuth *pendingDeviceAuth `json:"pending_device_auth"`
	}
	decode(t, "join_room", ans.Text, &refused)
	if !ans.IsError || refused.Success == nil || *refused.Success || refused.Error != "auth_required" ||
		refused.NextStep != "poll_device_auth" || refused.RoomID != secretRoom {
		t.Errorf("join_room(%s) after clear_saved_auth: isError %v, want the auth_required answer (success false, next_step poll_device_auth):\n%s",
			secretRoom, ans.IsError, ans.Text)
	}
	if refused.PendingDeviceAuth == nil || refused.PendingDeviceAuth.UserCode != gh.LastUserCode() || refused.PendingDeviceAuth.UserCode == code {
		t.Errorf("join_room's pending_device_auth = %+v, want a new device code (the fake's last is %q, the used one %q)",
			refused.PendingDeviceAuth, gh.LastUserCode(), code)
	}
}

// TestOriginalClientArguments: what a client of the original server sends
// works with the real binary and runner. Arguments nobody declared are
// ignored, the original's ignored ones (sender, conversation_id) too, a
// fractional timeout is taken; set_agent_name and check_repo_visibility
// answer; a declared argument of the wrong type is still refused, and
// the process keeps serving.
func TestOriginalClientArguments(t *testing.T) {
	t.Parallel()
	r := startRunner(t)
	d := startAgent(t, r.URL, agentConfig{Name: "delta", Dir: t.TempDir()})

	if sorted := slices.Sorted(slices.Values(d.toolNames(t))); !slices.Equal(sorted, wantTools) {
		t.Errorf("tools/list = %v, want %v", sorted, wantTools)
	}
	unknown := func(args map[string]any) map[string]any {
		args["no_such_argument"] = map[string]any{"from": "another version"}
		return args
	}
	var joined struct {
		RoomID string `json:"room_id"`
	}
	d.callOK(t, "join_room", unknown(map[string]any{"name": "compat", "session_mode": "current"}), &joined)
	var cur currentRoom
	d.callOK(t, "get_current_room", unknown(map[string]any{"conversation_id": "conv-1"}), &cur)
	if !cur.Connected || cur.RoomID != joined.RoomID {
		t.Fatalf("get_current_room: connected %v to %q; want %q", cur.Connected, cur.RoomID, joined.RoomID)
	}
	var sent sentMessage
	d.callOK(t, "send_message", unknown(map[string]any{"room_id": joined.RoomID, "text": "hello", "sender": "Impostor", "conversation_id": "conv-1"}), &sent)
	if sent.Sender != cur.AgentIdentity.ActorLabel {
		t.Errorf("send_message with sender Impostor was sent as %q; want the agent's own %q", sent.Sender, cur.AgentIdentity.ActorLabel)
	}
	var waited struct {
		Messages []wire.Message `json:"messages"`
	}
	d.callOK(t, "wait_for_messages", unknown(map[string]any{"room_id": joined.RoomID, "after_message_id": "msg_0", "timeout": 1500.5}), &waited)
	if len(waited.Messages) != 1 || waited.Messages[0].ID != sent.ID {
		t.Errorf("wait_for_messages after msg_0 with timeout 1500.5 answered %s; want the one message %s", describe(waited.Messages), sent.ID)
	}
	d.callOK(t, "read_messages", unknown(map[string]any{"room_id": joined.RoomID}), &waited)

	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"set_agent_name", unknown(map[string]any{"name": "Delta Two", "conversation_id": "conv-1"}), "Authentication required"},
		{"check_repo_visibility", unknown(map[string]any{"cwd": t.TempDir()}), "no remote configured"},
		{"send_message", map[string]any{"text": 7}, "invalid arguments"},
		{"wait_for_messages", map[string]any{"timeout": "soon"}, "invalid arguments"},
	} {
		ans := d.call(t, c.tool, c.args)
		var f failureAnswer
		decode(t, c.tool, ans.Text, &f)
		if !ans.IsError || f.Success == nil || *f.Success || !strings.Contains(f.Error, c.want) {
			t.Errorf("%s(%v): isError %v; want an error answer saying %q:\n%s", c.tool, c.args, ans.IsError, c.want, ans.Text)
		}
	}
	d.callOK(t, "get_current_room", nil, &cur) // still serving
}
