package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/actors"
	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/testwait"
	"github.com/letagents/letagents-go/shared/wire"
)

const (
	boardRoom = "github.com/acme/board"
	taskTitle = "Fix login"
	taskPR    = "https://github.com/acme/board/pull/9"
)

// TestBoardThroughTwoAgents: two agents of one GitHub account work one
// task through the board of a public repository's room, with the account's
// human, the room's admin, accepting and closing it over plain HTTP: the
// proposal, the acceptance, a claim and a lost race for it, a handoff
// refused while the target does not listen and done while it does, the
// review (not by the worker itself) and the merge; the room's timeline
// tells the story in the server's status lines.
func TestBoardThroughTwoAgents(t *testing.T) {
	t.Parallel()
	began := time.Now()
	r := startRunner(t)
	gh := r.GitHub
	gh.SetDeviceTiming(time.Second, 10*time.Minute)
	ann := gh.AddUser("ann")
	gh.AddRepo("acme/board", false)
	gh.Grant("acme/board", "ann", "admin") // before the joins: joining makes her the room's admin

	alphaState := filepath.Join(t.TempDir(), "alpha-state.json")
	a := startAgent(t, r.URL, agentConfig{Name: "alpha", Dir: t.TempDir(), StatePath: alphaState})
	b := startAgent(t, r.URL, agentConfig{Name: "bravo", Dir: t.TempDir()})
	started := time.Now()
	t.Logf("timing: runner and two agents up in %v", started.Sub(began).Round(time.Millisecond))

	for _, ag := range []*agent{a, b} {
		ag.signInDevice(t, gh, "ann")
		var joined struct {
			RoomID    string `json:"room_id"`
			Role      string `json:"role"`
			JoinedVia string `json:"joined_via"`
		}
		ag.callOK(t, "join_room", map[string]any{"name": boardRoom}, &joined)
		if joined.RoomID != boardRoom || joined.Role != "admin" {
			t.Fatalf("agent %s: join_room(%s) answered room %q role %q; want the room with role admin (ann administers acme/board on GitHub)",
				ag.name, boardRoom, joined.RoomID, joined.Role)
		}
	}
	human := person{t: t, base: r.URL, token: savedToken(t, alphaState)}
	signedIn := time.Now()
	t.Logf("timing: both agents signed in as ann and in %s after %v", boardRoom, signedIn.Sub(started).Round(time.Millisecond))

	sa := a.registerSession(t)
	sb := b.registerSession(t)
	for _, c := range []struct {
		who  string
		sess wire.AgentSession
		name string
	}{{"alpha", sa, "alpha"}, {"bravo", sb, "bravo"}} {
		display, owner, _ := actors.ParseActorLabel(c.sess.ActorLabel)
		if c.sess.AgentKey != "ann/"+c.name || display != c.name || owner != ann.Name || c.sess.RoomID != boardRoom {
			t.Errorf("%s's session: key %q, label %q (display %q, owner %q), room %q; want ann/%s, %s owned by %q, in %s",
				c.who, c.sess.AgentKey, c.sess.ActorLabel, display, owner, c.sess.RoomID, c.name, c.name, ann.Name, boardRoom)
		}
	}
	withA := func(args map[string]any) map[string]any { args["agent_session_id"] = sa.SessionID; return args }
	withB := func(args map[string]any) map[string]any { args["agent_session_id"] = sb.SessionID; return args }

	// An agent's task is a proposal until the room's admin accepts it.
	var added boardAnswer[wire.Task]
	a.callOK(t, "add_task", withA(map[string]any{"title": taskTitle}), &added)
	task := added.Result
	if !added.Success || added.RoomID != boardRoom || task.ID != "task_1" || task.Status != "proposed" || task.Title != taskTitle ||
		task.CreatedBy != sa.ActorLabel || task.Assignee != nil || len(task.ActiveLeases) != 0 {
		t.Fatalf("add_task answered %+v (success %v, room %q); want task_1 %q proposed, created by %q, unassigned",
			task, added.Success, added.RoomID, taskTitle, sa.ActorLabel)
	}
	a.refused(t, "claim_task", withA(map[string]any{"task_id": "task_1"}), http.StatusBadRequest, "",
		"claiming a proposed task (nobody accepted it yet)")

	var accepted wire.Task
	human.do(http.MethodPatch, "/tasks/task_1", map[string]any{"status": "accepted"}, http.StatusOK, &accepted)
	if accepted.Status != "accepted" {
		t.Fatalf("the human's PATCH status accepted answered status %q", accepted.Status)
	}

	// alpha claims it; bravo comes second.
	var claimed boardAnswer[wire.Task]
	a.callOK(t, "claim_task", withA(map[string]any{"task_id": "task_1"}), &claimed)
	task = claimed.Result
	if task.Status != "assigned" || deref(task.Assignee) != sa.ActorLabel || deref(task.AssigneeAgentKey) != sa.AgentKey {
		t.Errorf("alpha's claim_task: status %q assignee %q key %q; want assigned to %q (%s)",
			task.Status, deref(task.Assignee), deref(task.AssigneeAgentKey), sa.ActorLabel, sa.AgentKey)
	}
	firstLease := checkWorkLease(t, "after alpha's claim", task, sa)
	b.refused(t, "claim_task", withB(map[string]any{"task_id": "task_1"}), http.StatusConflict, "coordination_wrong_actor",
		"bravo claiming the task alpha holds")

	var posted struct {
		Success      bool   `json:"success"`
		StatusPosted string `json:"status_posted"`
		Sender       string `json:"sender"`
		MessageID    string `json:"message_id"`
	}
	a.callOK(t, "post_status", withA(map[string]any{"status": "working on task_1"}), &posted)
	if !posted.Success || posted.StatusPosted != "working" || posted.Sender != sa.ActorLabel || posted.MessageID == "" {
		t.Errorf("post_status answered %+v; want success, status working, sent as %q", posted, sa.ActorLabel)
	}

	var board boardAnswer[wire.TaskList]
	a.callOK(t, "get_board", withA(map[string]any{}), &board)
	if len(board.Result.Tasks) != 1 || board.Result.Tasks[0].ID != "task_1" || board.Result.Tasks[0].Status != "assigned" ||
		deref(board.Result.Tasks[0].Assignee) != sa.ActorLabel {
		t.Errorf("get_board lists %+v; want task_1 alone, assigned to %q", board.Result.Tasks, sa.ActorLabel)
	} else {
		checkWorkLease(t, "on the board", board.Result.Tasks[0], sa)
	}

	// A handoff needs a target that listens: bravo registered but never
	// waited for messages.
	if p, ok := human.participant(sb.SessionID); !ok || p.Connected {
		t.Errorf("the roster before bravo ever waited: bravo's session %s found %v, connected %v; want it listed, not connected",
			sb.SessionID, ok, p.Connected)
	}
	handoff := func() map[string]any {
		return withA(map[string]any{"task_id": "task_1", "target_agent_key": sb.AgentKey, "reason": "bravo knows the login form"})
	}
	a.refused(t, "handoff_task_lease", handoff(), http.StatusConflict, "coordination_target_session_unreachable",
		"handing task_1 to bravo, which is not waiting for messages")

	// bravo waits from the newest message on; once the room sees it
	// connected, the handoff goes through and wakes it.
	var newest messagesAnswer
	b.callOK(t, "read_messages", map[string]any{"limit": 1}, &newest)
	if newest.LastObservedMessageID != posted.MessageID {
		t.Errorf("the newest message is %q, want alpha's status line %q (the refused handoff must post nothing)",
			newest.LastObservedMessageID, posted.MessageID)
	}
	cursor := newest.LastObservedMessageID
	waitArgs := withB(map[string]any{"after_message_id": cursor, "timeout": waitMillis})
	wait := b.callAsync("wait_for_messages", waitArgs, 2*waitMillis*time.Millisecond)
	stillBlocked(t, wait, "bravo's wait_for_messages(after "+cursor+")")
	human.awaitConnected(sb.SessionID)

	handedAt := time.Now()
	var handed boardAnswer[wire.LeaseActionResult]
	a.callOK(t, "handoff_task_lease", handoff(), &handed)
	task = handed.Result.Task
	if handed.Result.Action != "handoff" || task.Status != "assigned" || deref(task.Assignee) != sb.ActorLabel ||
		deref(task.AssigneeAgentKey) != sb.AgentKey {
		t.Errorf("handoff_task_lease: action %q, task %s %q assigned to %q (%s); want handoff, assigned to %q (%s)",
			handed.Result.Action, task.ID, task.Status, deref(task.Assignee), deref(task.AssigneeAgentKey), sb.ActorLabel, sb.AgentKey)
	}
	if rel := handed.Result.ReleasedLease; rel == nil || rel.ID != firstLease.ID || rel.Status != "released" || rel.AgentKey != sa.AgentKey {
		t.Errorf("handoff_task_lease: released_lease %+v; want alpha's lease %s, released", rel, firstLease.ID)
	}
	next := handed.Result.NewLease
	if next == nil || next.ID == firstLease.ID || next.Kind != "work" || next.Status != "active" || next.AgentKey != sb.AgentKey ||
		deref(next.AgentSessionID) != sb.SessionID || next.ActorLabel != sb.ActorLabel {
		t.Errorf("handoff_task_lease: new_lease %+v; want a new active work lease of bravo's session %s", next, sb.SessionID)
	} else {
		if next.BranchRef == nil || firstLease.BranchRef == nil || *next.BranchRef != *firstLease.BranchRef {
			t.Errorf("the new lease's branch_ref %v, want the old one's %v (a handoff keeps the branch)", next.BranchRef, firstLease.BranchRef)
		}
		checkWorkLease(t, "after the handoff", task, sb)
	}

	var woke messagesAnswer
	awaitAnswer(t, wait, "bravo's wait_for_messages(after "+cursor+")", &woke)
	t.Logf("timing: bravo's wait woke %v after the handoff", time.Since(handedAt).Round(time.Millisecond))
	wantHandoff := "[status] alpha handed task_1 over to bravo: " + taskTitle
	if len(woke.Messages) != 1 || !isSystem(woke.Messages[0]) || woke.Messages[0].Text != wantHandoff {
		t.Errorf("bravo woke with %s; want only the server's line %q", describe(woke.Messages), wantHandoff)
	}

	// bravo finishes; it may not review its own work, alpha may.
	var completed boardAnswer[wire.Task]
	b.callOK(t, "complete_task", withB(map[string]any{"task_id": "task_1", "pr_url": taskPR}), &completed)
	task = completed.Result
	if task.Status != "in_review" || deref(task.PRURL) != taskPR || deref(task.Assignee) != sb.ActorLabel {
		t.Errorf("complete_task: status %q pr_url %q assignee %q; want in_review, %s, still %q",
			task.Status, deref(task.PRURL), deref(task.Assignee), taskPR, sb.ActorLabel)
	}
	b.refused(t, "claim_task_review", withB(map[string]any{"task_id": "task_1"}), http.StatusConflict, "coordination_self_review",
		"bravo reviewing the task it holds")
	var review boardAnswer[wire.ReviewClaimed]
	a.callOK(t, "claim_task_review", withA(map[string]any{"task_id": "task_1", "reason": "second pair of eyes"}), &review)
	if l := review.Result.Lease; l.Kind != "review" || l.Status != "active" || l.AgentKey != sa.AgentKey || l.ActorLabel != sa.ActorLabel {
		t.Errorf("alpha's claim_task_review: lease %+v; want an active review lease of %s", l, sa.AgentKey)
	}
	if kinds := leaseKinds(review.Result.Task); !slices.Equal(kinds, []string{"work:" + sb.AgentKey, "review:" + sa.AgentKey}) {
		t.Errorf("task_1's active leases after the review claim: %v; want bravo's work lease, then alpha's review lease", kinds)
	}

	// The human merges (a review by another agent exists) and closes it.
	var merged, done wire.Task
	human.do(http.MethodPatch, "/tasks/task_1", map[string]any{"status": "merged"}, http.StatusOK, &merged)
	if merged.Status != "merged" {
		t.Errorf("the human's PATCH status merged answered status %q", merged.Status)
	}
	human.do(http.MethodPatch, "/tasks/task_1", map[string]any{"status": "done"}, http.StatusOK, &done)
	if done.Status != "done" || len(done.ActiveLeases) != 0 {
		t.Errorf("the human's PATCH status done answered status %q with leases %v; want done, none active", done.Status, leaseKinds(done))
	}

	// The timeline: the server's status lines, one per step, and alpha's.
	var all messagesAnswer
	a.callOK(t, "read_messages", map[string]any{"limit": 0}, &all)
	var lines []string
	sawStatus := false
	for _, m := range all.Messages {
		switch {
		case isSystem(m):
			lines = append(lines, m.Text)
		case m.ID == posted.MessageID:
			sawStatus = m.Sender == sa.ActorLabel && m.Text == "[status] working on task_1"
		}
	}
	wantLines := []string{
		"[status] task_1 is accepted and ready to be claimed: " + taskTitle,
		"[status] alpha claimed task_1: " + taskTitle,
		wantHandoff,
		"[status] task_1 is ready for review: " + taskTitle,
		"[status] task_1 has been merged: " + taskTitle,
		"[status] task_1 is complete: " + taskTitle,
	}
	if !slices.Equal(lines, wantLines) {
		t.Errorf("the server's lines in the room:\n  %s\nwant:\n  %s", strings.Join(lines, "\n  "), strings.Join(wantLines, "\n  "))
	}
	if !sawStatus {
		t.Errorf("the room's messages %s lack alpha's %s %q sent as %q", describe(all.Messages), posted.MessageID, "[status] working on task_1", sa.ActorLabel)
	}
	t.Logf("timing: the board flow took %v; the whole test %v", time.Since(signedIn).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// boardAnswer is a board tool's answer: the server's JSON under result.
type boardAnswer[T any] struct {
	Success bool   `json:"success"`
	RoomID  string `json:"room_id"`
	Result  T      `json:"result"`
}

// apiRefusal is a tool's error answer passing on the API's refusal.
type apiRefusal struct {
	Success *bool  `json:"success"`
	Error   string `json:"error"`
	Status  int    `json:"status"`
	Code    string `json:"code"`
}

// refused calls a tool that the API must refuse with status and code
// ("" for a refusal without one).
func (a *agent) refused(t *testing.T, tool string, args map[string]any, status int, code, what string) {
	t.Helper()
	ans := a.call(t, tool, args)
	var f apiRefusal
	decode(t, tool, ans.Text, &f)
	if !ans.IsError || f.Success == nil || *f.Success || f.Status != status || f.Code != code {
		t.Errorf("%s: agent %s's %s answered isError %v, status %d, code %q; want a refusal with status %d, code %q:\n%s",
			what, a.name, tool, ans.IsError, f.Status, f.Code, status, code, ans.Text)
	}
}

// signInDevice signs the agent in as login through the device-flow tools,
// its human approving the code on the fake GitHub.
func (a *agent) signInDevice(t *testing.T, gh *githubtest.Server, login string) {
	t.Helper()
	var started struct {
		Success  bool   `json:"success"`
		UserCode string `json:"user_code"`
		Interval int    `json:"interval_seconds"`
	}
	a.callOK(t, "start_device_auth", nil, &started)
	if !started.Success || started.UserCode == "" || started.UserCode != gh.LastUserCode() {
		t.Fatalf("agent %s: start_device_auth gave user code %q; want the fake GitHub's last one %q", a.name, started.UserCode, gh.LastUserCode())
	}
	gh.ApproveDevice(started.UserCode, login)
	var polled struct {
		Success  bool   `json:"success"`
		Status   string `json:"status"`
		Interval int    `json:"interval"`
		Account  struct {
			Login string `json:"login"`
		} `json:"account"`
	}
	// Paced as the device flow asks, bounded as testwait bounds a wait.
	deadline := time.Now().Add(testwait.Bound)
	for {
		polled.Status, polled.Interval = "", 0
		a.callOK(t, "poll_device_auth", map[string]any{"auto_join": false}, &polled)
		if polled.Status != "pending" && polled.Status != "slow_down" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent %s: poll_device_auth still %q %v after approval", a.name, polled.Status, testwait.Bound)
		}
		// The device flow's own pace, not a guess: polling sooner is refused.
		time.Sleep(time.Duration(max(polled.Interval, started.Interval, 1)) * time.Second)
	}
	if !polled.Success || polled.Status != "authorized" || polled.Account.Login != login {
		t.Fatalf("agent %s: poll_device_auth: success %v status %q account %q; want authorized as %s",
			a.name, polled.Success, polled.Status, polled.Account.Login, login)
	}
}

// registerSession registers the agent as a worker of its room.
func (a *agent) registerSession(t *testing.T) wire.AgentSession {
	t.Helper()
	var reg struct {
		Success        bool              `json:"success"`
		AgentSession   wire.AgentSession `json:"agent_session"`
		AgentSessionID string            `json:"agent_session_id"`
	}
	a.callOK(t, "register_agent_session", map[string]any{"runtime": "e2e"}, &reg)
	s := reg.AgentSession
	if !reg.Success || !strings.HasPrefix(reg.AgentSessionID, "as_") || s.SessionID != reg.AgentSessionID || s.SessionKind != "worker" {
		t.Fatalf("agent %s: register_agent_session answered session %q (agent_session_id %q, kind %q); want a worker session as_N",
			a.name, s.SessionID, reg.AgentSessionID, s.SessionKind)
	}
	if s.SessionToken != "" {
		t.Errorf("agent %s: register_agent_session showed the session token to the model", a.name)
	}
	return s
}

// checkWorkLease wants t's first active lease to be holder's active work
// lease, and returns it.
func checkWorkLease(t *testing.T, when string, task wire.Task, holder wire.AgentSession) wire.Lease {
	t.Helper()
	if len(task.ActiveLeases) == 0 {
		t.Fatalf("%s: %s has no active lease; want %s's work lease", when, task.ID, holder.AgentKey)
	}
	l := task.ActiveLeases[0]
	if l.Kind != "work" || l.Status != "active" || l.AgentKey != holder.AgentKey || l.ActorLabel != holder.ActorLabel ||
		deref(l.AgentSessionID) != holder.SessionID || l.TaskID != task.ID || !strings.HasPrefix(l.ID, "tl_") {
		t.Errorf("%s: %s's first active lease is %+v; want an active work lease tl_… of %s (session %s)",
			when, task.ID, l, holder.AgentKey, holder.SessionID)
	}
	return l
}

// leaseKinds lists a task's active leases as kind:agent_key.
func leaseKinds(task wire.Task) []string {
	out := make([]string, len(task.ActiveLeases))
	for i, l := range task.ActiveLeases {
		out[i] = l.Kind + ":" + l.AgentKey
	}
	return out
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// isSystem tells the server's own lines as clients must: by source.
func isSystem(m wire.Message) bool { return m.Source != nil && *m.Source == letagents.SourceSystem }

// describe shows messages briefly, for failure messages.
func describe(msgs []wire.Message) string {
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		parts[i] = m.ID + " " + m.Sender + ": " + m.Text
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// savedToken is the owner token an agent's sign-in saved in its state file.
func savedToken(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the state file: %v", err)
	}
	var st struct {
		Auth *struct {
			Token string `json:"token"`
		} `json:"auth"`
	}
	if err := json.Unmarshal(raw, &st); err != nil || st.Auth == nil || st.Auth.Token == "" {
		t.Fatalf("the state file %s holds no auth.token (%v)", path, err)
	}
	return st.Auth.Token
}

// person is the room's human: plain HTTP to the API with her owner token
// and no agent session.
type person struct {
	t           *testing.T
	base, token string // token "": no Authorization (the local owner)
	room        string // "" for boardRoom
}

// do calls a route of the board's room (path after /rooms/<room>), wants
// the status, and decodes the answer into out.
func (p person) do(method, path string, body any, want int, out any) {
	p.t.Helper()
	raw, status := p.request(method, path, body)
	in, _ := json.Marshal(body)
	var compact bytes.Buffer
	if json.Compact(&compact, raw) != nil {
		compact.Reset()
		compact.Write(raw)
	}
	text := compact.String()
	if len(text) > 600 {
		text = text[:600] + "…"
	}
	p.t.Logf("person (owner token %v, no session): %s %s %s → %d %s", p.token != "", method, path, in, status, text)
	if status != want {
		p.t.Fatalf("%s /rooms/%s%s %s answered %d, want %d:\n%s", method, p.roomID(), path, in, status, want, raw)
	}
	if out != nil {
		decode(p.t, method+" "+path, string(raw), out)
	}
}

func (p person) request(method, path string, body any) ([]byte, int) {
	p.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			p.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, p.base+"/rooms/"+p.roomID()+path, rd)
	if err != nil {
		p.t.Fatal(err)
	}
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatalf("%s %s: read the answer: %v", method, path, err)
	}
	return raw, resp.StatusCode
}

func (p person) roomID() string { return cmp.Or(p.room, boardRoom) }

// participant finds a session in the room's roster.
func (p person) participant(sessionID string) (wire.RoomParticipant, bool) {
	p.t.Helper()
	raw, status := p.request(http.MethodGet, "/participants", nil)
	if status != http.StatusOK {
		p.t.Fatalf("GET /rooms/%s/participants answered %d:\n%s", p.roomID(), status, raw)
	}
	var list wire.Participants
	decode(p.t, "GET participants", string(raw), &list)
	for _, x := range list.Participants {
		if x.SessionID != nil && *x.SessionID == sessionID {
			return x, true
		}
	}
	return wire.RoomParticipant{}, false
}

// awaitConnected polls the roster until the session shows as connected.
func (p person) awaitConnected(sessionID string) {
	p.t.Helper()
	began := time.Now()
	testwait.Until(p.t, "the roster to show "+sessionID+" connected", func() bool {
		x, ok := p.participant(sessionID)
		return ok && x.Connected
	})
	p.t.Logf("person: the roster shows %s connected after %v", sessionID, time.Since(began).Round(time.Millisecond))
}
