package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/wire"
)

const (
	appID        = "4242"
	appRepo      = "acme/widgets"
	appRoom      = "github.com/acme/widgets"
	installation = 77 // githubtest's payloads come through this installation
)

// newAppEnv is an env that takes GitHub's webhooks and acts as a GitHub
// App installed on acme/widgets, enforcing leases in mode ("" for the
// default), with the fake GitHub on the env's test clock.
func newAppEnv(t *testing.T, mode string) *env {
	t.Helper()
	e := newAuthEnv(t, map[string]string{"GITHUB_WEBHOOK_SECRET": hookSecret, "LETAGENTS_REPO_ACCESS": "open",
		"GITHUB_APP_ID": appID, "GITHUB_APP_PRIVATE_KEY": githubtest.AppKeyPEM(t), "GITHUB_APP_SLUG": "letagents-test",
		"LETAGENTS_GITHUB_ENFORCEMENT_MODE": mode})
	e.gh.SetApp(appID, &githubtest.AppKey(t).PublicKey, e.clock.Now)
	e.gh.AddRepo(appRepo, false)
	e.gh.AddInstallation(installation, appRepo)
	return e
}

// push delivers a pull_request event of action for a PR on head at sha
// and answers the lease_check it wrote.
func (e *env) push(t *testing.T, id, action, head, sha string) string {
	t.Helper()
	pr := githubtest.PR{Number: 12, Title: "Widgets", Author: "ann", Head: head, HeadSHA: sha}
	return e.deliver(t, "pull_request", id, githubtest.PullRequestEvent(appRepo, action, "ann", pr)).want(t, 202, "").str("lease_check")
}

// Each mode writes what the original's does on a PR whose branch no
// lease holds: nothing (off), the failing check (checks), the check and
// a comment (flag), and also the PR closed (close).
func TestLeaseCheckModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode           string
		runs, comments int
		closed         bool
	}{
		{"off", 0, 0, false},
		{"", 1, 0, false}, // the default: checks
		{"checks", 1, 0, false},
		{"flag", 1, 1, false},
		{"close", 1, 1, true},
	}
	for _, tt := range tests {
		t.Run("mode "+tt.mode, func(t *testing.T) {
			t.Parallel()
			e := newAppEnv(t, tt.mode)
			e.worker(t, appRoom, "Builder")
			got := e.push(t, "m-1", "opened", "feature/x", "sha1")
			runs := e.gh.CheckRuns(appRepo)
			if len(runs) != tt.runs {
				t.Fatalf("%d check runs, want %d: %+v", len(runs), tt.runs, runs)
			}
			if tt.runs > 0 {
				r := runs[0]
				if got != "failure" || r.Name != letagents.LeaseCheckName || r.HeadSHA != "sha1" || r.Conclusion != "failure" ||
					r.Status != "completed" || r.Title != "LetAgents lease required" || !strings.Contains(r.Text, `branch "feature/x"`) ||
					!strings.HasSuffix(r.DetailsURL, "/in/"+appRoom) {
					t.Errorf("lease_check %q, run %+v", got, r)
				}
			} else if got != "" {
				t.Errorf("mode off answered lease_check %q", got)
			}
			comments := e.gh.Comments(appRepo)
			if len(comments) != tt.comments || (tt.comments > 0 && (comments[0].Number != 12 ||
				!strings.Contains(comments[0].Body, "`"+letagents.LeaseCheckName+"`"))) {
				t.Errorf("comments %+v, want %d on #12 naming the check", comments, tt.comments)
			}
			if closed := e.gh.ClosedPulls(appRepo); (len(closed) == 1) != tt.closed {
				t.Errorf("closed %v, want closed %v", closed, tt.closed)
			}
			// Actions that do not move the PR's head write nothing more.
			e.push(t, "m-2", "edited", "feature/x", "sha1")
			e.push(t, "m-3", "closed", "feature/x", "sha1")
			if n := len(e.gh.CheckRuns(appRepo)); n != tt.runs {
				t.Errorf("after edited and closed: %d runs, want %d", n, tt.runs)
			}
		})
	}
}

// acceptedTask is a task of appRoom that w proposed, accepted as the
// room's admin would accept it, so that w may claim it.
func (e *env) acceptedTask(t *testing.T, w session) string {
	t.Helper()
	task := e.as(t, w.owner, http.MethodPost, "/rooms/"+appRoom+"/tasks", `{"title": "Ship widgets"}`).want(t, 201, "").str("id")
	if _, err := e.db.Pool.Exec(t.Context(), `UPDATE tasks SET status = 'accepted' WHERE room_id = $1`, appRoom); err != nil {
		t.Fatal(err)
	}
	return task
}

// The check follows the lease between pushes: passing while a worker's
// claim leases the branch, failing once the lease is released, passing
// again once it is claimed again; one installation token serves all
// three.
func TestLeaseCheckFlips(t *testing.T) {
	t.Parallel()
	e := newAppEnv(t, "checks")
	w := e.worker(t, appRoom, "Builder")
	task := e.acceptedTask(t, w)
	claim := func() string {
		t.Helper()
		r := e.as(t, w.owner, http.MethodPatch, "/rooms/"+appRoom+"/tasks/"+task, `{"status": "assigned", `+w.creds()+`}`).want(t, 200, "")
		leases, _ := taskOf(r)["active_leases"].([]any)
		if len(leases) != 1 {
			t.Fatalf("claim: %s, want one lease", r.raw)
		}
		return leases[0].(map[string]any)["branch_ref"].(string)
	}
	release := func() {
		t.Helper()
		e.as(t, w.owner, http.MethodPost, "/rooms/"+appRoom+"/tasks/"+task+"/lease-action",
			`{"action": "release", "reason": "done for now", `+w.creds()+`}`).want(t, 200, "")
	}
	branch := claim()
	steps := []struct {
		name, sha string
		before    func()
		want      string
	}{
		{"leased", "s1", nil, "success"},
		{"released", "s2", release, "failure"},
		{"leased again", "s3", func() {
			if again := claim(); again != branch {
				t.Fatalf("claimed again on %s, want %s", again, branch)
			}
		}, "success"},
	}
	for i, st := range steps {
		if st.before != nil {
			st.before()
		}
		action := map[bool]string{true: "opened", false: "synchronize"}[i == 0]
		if got := e.push(t, fmt.Sprintf("f-%d", i), action, branch, st.sha); got != st.want {
			t.Errorf("%s: lease_check %q, want %q", st.name, got, st.want)
		}
		runs := e.gh.CheckRuns(appRepo)
		if len(runs) != i+1 {
			t.Fatalf("%s: %d runs, want %d", st.name, len(runs), i+1)
		}
		r := runs[i]
		if r.HeadSHA != st.sha || r.Conclusion != st.want {
			t.Errorf("%s: run %+v, want %s on %s", st.name, r, st.want, st.sha)
		}
		if st.want == "success" && (!strings.Contains(r.Text, w.label) || !strings.Contains(r.Text, task) || r.Title != "LetAgents lease verified") {
			t.Errorf("%s: run text %q, want the holder %s and %s", st.name, r.Text, w.label, task)
		}
	}
	if n := e.gh.TokensMinted(installation); n != 1 {
		t.Errorf("three checks minted %d installation tokens, want 1 (cached)", n)
	}
}

// A protected branch (main, master, staging, production) or the
// repository's default branch is never leased: its PR fails the check
// even where a lease names that branch.
func TestLeaseCheckProtectedBranches(t *testing.T) {
	t.Parallel()
	e := newAppEnv(t, "checks")
	w := e.worker(t, appRoom, "Builder")
	task := e.acceptedTask(t, w)
	e.as(t, w.owner, http.MethodPatch, "/rooms/"+appRoom+"/tasks/"+task, `{"status": "assigned", `+w.creds()+`}`).want(t, 200, "")
	for i, head := range []string{"main", "Master", "staging", "production"} {
		// Whatever the board says, the lease names this branch.
		if _, err := e.db.Pool.Exec(t.Context(), `UPDATE task_leases SET branch_ref = $2 WHERE room_id = $1`, appRoom, head); err != nil {
			t.Fatal(err)
		}
		if got := e.push(t, fmt.Sprintf("p-%d", i), "opened", head, "sha"+head); got != "failure" {
			t.Errorf("PR from %s: lease_check %q, want failure", head, got)
		}
		runs := e.gh.CheckRuns(appRepo)
		if r := runs[len(runs)-1]; !strings.Contains(r.Text, "is protected") {
			t.Errorf("PR from %s: %q, want it to say the branch is protected", head, r.Text)
		}
	}
}

// When GitHub does not take the check, the delivery is still taken (the
// room heard of the PR) and says lease_check "error".
func TestLeaseCheckGitHubDown(t *testing.T) {
	t.Parallel()
	e := newAppEnv(t, "checks")
	e.worker(t, appRoom, "Builder")
	e.gh.FailAPI(http.StatusBadGateway)
	if got := e.push(t, "d-1", "opened", "feature/x", "s1"); got != "error" {
		t.Errorf("lease_check %q, want error", got)
	}
	e.gh.FailAPI(0)
	if got := e.push(t, "d-2", "synchronize", "feature/x", "s2"); got != "failure" {
		t.Errorf("after GitHub is back: lease_check %q, want failure", got)
	}
}

// integration reads GET …/integrations/github.
func (e *env) integration(t *testing.T, token, room string) wire.GitHubIntegration {
	t.Helper()
	r := e.as(t, token, http.MethodGet, "/rooms/"+room+"/integrations/github", "").want(t, 200, "")
	var out wire.GitHubIntegration
	if err := json.Unmarshal([]byte(r.raw), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The App's installation deliveries say whether a room's repository is
// connected, as GET …/integrations/github shows (for a branch room, its
// repository's), and the room hears each change of it.
func TestGitHubAppInstallation(t *testing.T) {
	t.Parallel()
	e := newAppEnv(t, "flag")
	w := e.worker(t, appRoom, "Builder")
	before := e.integration(t, w.owner, appRoom)
	if !before.Configured || !before.InstallURLAvailable || before.Connected || before.Repository != nil || before.EnforcementMode != "flag" ||
		deref(before.AppSlug) != "letagents-test" || !strings.HasSuffix(deref(before.SetupURL), "/auth/github/app/callback") ||
		deref(before.InstallURL) != "https://github.com/apps/letagents-test/installations/new?state=github.com%2Facme%2Fwidgets" {
		t.Fatalf("before any installation: %+v", before)
	}
	steps := []struct {
		name, event string
		payload     map[string]any
		connected   bool
		line        string
	}{
		{"created", "installation", githubtest.InstallationEvent("created", installation, "acme", appRepo), true,
			"The GitHub App now covers acme/widgets (installation 77 on acme)"},
		{"suspended", "installation", githubtest.InstallationEvent("suspend", installation, "acme"), false,
			"GitHub App installation 77 on acme was suspended: acme/widgets is no longer connected."},
		{"unsuspended", "installation", githubtest.InstallationEvent("unsuspend", installation, "acme"), true,
			"GitHub App installation 77 on acme was unsuspended: acme/widgets is connected again."},
		{"removed", "installation_repositories", githubtest.InstallationReposEvent("removed", installation, "acme", appRepo), false,
			"The GitHub App no longer covers acme/widgets (installation 77 on acme)."},
		{"added", "installation_repositories", githubtest.InstallationReposEvent("added", installation, "acme", appRepo), true,
			"The GitHub App now covers acme/widgets"},
		{"deleted", "installation", githubtest.InstallationEvent("deleted", installation, "acme", appRepo), false,
			"GitHub App installation 77 on acme was uninstalled: acme/widgets is no longer connected."},
	}
	for i, st := range steps {
		ans := e.deliver(t, st.event, fmt.Sprintf("i-%d", i), st.payload).want(t, 202, "")
		if ans.str("status") != "processed" {
			t.Errorf("%s: answer %s, want processed", st.name, ans.raw)
		}
		got := e.integration(t, w.owner, appRoom)
		if got.Connected != st.connected || got.Installation == nil || deref(got.Installation.TargetLogin) != "acme" ||
			got.Installation.InstallationID != "77" || got.Repository == nil || got.Repository.FullName != appRepo {
			t.Errorf("%s: %+v (installation %+v, repository %+v), want connected %v", st.name, got, got.Installation, got.Repository, st.connected)
		}
		if lines := e.systemLines(t, appRoom); !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, st.line) }) {
			t.Errorf("%s: status lines %q, want one beginning %q", st.name, lines, st.line)
		}
	}
	if got := e.integration(t, w.owner, appRoom); got.Installation.UninstalledAt == nil || got.Repository.RemovedAt != nil {
		t.Errorf("after deleted: installation %+v repository %+v, want it uninstalled", got.Installation, got.Repository)
	}
	// A repeat changes nothing.
	if ans := e.deliver(t, "installation", "i-0", steps[0].payload).want(t, 202, ""); ans.obj["duplicate"] != true {
		t.Errorf("a repeat: %s", ans.raw)
	}
	if e.integration(t, w.owner, appRoom).Connected {
		t.Error("a repeated delivery connected the room again")
	}
	// A room of no repository has no GitHub integration.
	e.as(t, w.owner, http.MethodPost, "/rooms/team/join", "").want(t, 200, "")
	e.as(t, w.owner, http.MethodGet, "/rooms/team/integrations/github", "").want(t, 400, "repo-backed rooms")
}

// An App installed before this service heard of it is known from the
// installation its repository's deliveries come through; a branch room
// reads its repository's connection.
func TestGitHubAppKnownFromDeliveries(t *testing.T) {
	t.Parallel()
	e := newAppEnv(t, "checks")
	w := e.worker(t, appRoom, "Builder")
	e.push(t, "k-1", "opened", "feature/x", "s1")
	branchRoom, err := rooms.BranchRoomID(appRoom, "feature/x")
	if err != nil {
		t.Fatal(err)
	}
	e.as(t, w.owner, http.MethodPost, "/rooms/"+branchRoom+"/join", "").want(t, 200, "")
	got := e.integration(t, w.owner, branchRoom)
	if !got.Connected || got.AccessRoomID != appRoom || got.Installation == nil || got.Installation.TargetLogin != nil ||
		got.Repository == nil || deref(got.Repository.GitHubRepoID) != "5001" {
		t.Errorf("after a PR delivery: %+v, installation %+v, repository %+v", got, got.Installation, got.Repository)
	}
}

// Without an App the integration says so, and a PR gets no check.
func TestGitHubIntegrationWithoutApp(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, map[string]string{"GITHUB_WEBHOOK_SECRET": hookSecret, "LETAGENTS_REPO_ACCESS": "open"})
	w := e.worker(t, appRoom, "Builder")
	got := e.integration(t, w.owner, appRoom)
	if got.Configured || got.InstallURLAvailable || got.AppSlug != nil || got.InstallURL != nil || got.EnforcementMode != "off" || got.Connected {
		t.Errorf("without an App: %+v", got)
	}
	if lc := e.push(t, "n-1", "opened", "feature/x", "s1"); lc != "" {
		t.Errorf("without an App: lease_check %q", lc)
	}
}

// The App's setup URL sends the installer back to the room its install
// link was opened from, as the original's, and refuses what GitHub never
// sends.
func TestGitHubAppCallback(t *testing.T) {
	t.Parallel()
	e := newAppEnv(t, "checks")
	e.worker(t, appRoom, "Builder")
	tests := []struct {
		name, query string
		status      int
		location    string
	}{
		{"installed from a room", "?installation_id=77&setup_action=install&state=github.com%2Facme%2Fwidgets", 302,
			"/in/github.com/acme/widgets?github_app_setup=install"},
		{"updated", "?installation_id=77&setup_action=update&state=github.com/acme/widgets", 302,
			"/in/github.com/acme/widgets?github_app_setup=update"},
		{"no state", "?installation_id=77&setup_action=install", 302, "/?github_app_setup=install"},
		{"no action", "", 302, "/?github_app_setup=complete"},
		{"a room nobody opened", "?setup_action=install&state=github.com/acme/other", 302,
			"/?github_app_setup=install&github_app_state=invalid"},
		{"not a room id", "?setup_action=install&state=%00", 302, "/?github_app_setup=install&github_app_state=invalid"},
		{"bad action", "?setup_action=hack", 400, ""},
		{"bad installation id", "?installation_id=-1&setup_action=install", 400, ""},
	}
	for _, tt := range tests {
		r := e.call(t, http.MethodGet, "/auth/github/app/callback"+tt.query, "")
		if r.status != tt.status || r.header.Get("Location") != tt.location {
			t.Errorf("%s: %d %q, want %d %q", tt.name, r.status, r.header.Get("Location"), tt.status, tt.location)
		}
		if tt.status == 400 && r.str("error") == "" {
			t.Errorf("%s: %s, want a JSON error", tt.name, r.raw)
		}
	}
}

// A failing check that no lease holder owns opens a follow-up task on
// the repo room's board, as the original's check-run-autotasks: once
// while it is open, never for the letagents-lease check itself, and not
// for a leased branch, whose holder hears of it instead.
func TestFailingCheckOpensFollowUp(t *testing.T) {
	t.Parallel()
	e := newAppEnv(t, "checks")
	w := e.worker(t, appRoom, "Builder")
	followUps := func() []map[string]any {
		t.Helper()
		var out []map[string]any
		r := e.as(t, w.owner, http.MethodGet, "/rooms/"+appRoom+"/tasks", "").want(t, 200, "")
		list, _ := r.obj["tasks"].([]any)
		for _, x := range list {
			if m := x.(map[string]any); m["created_by"] == "letagents" {
				out = append(out, m)
			}
		}
		return out
	}
	e.deliver(t, "check_run", "c-1", githubtest.CheckRunEvent(appRepo, 501, "test", "failure", "main", "s1")).want(t, 202, "")
	got := followUps()
	if len(got) != 1 || got[0]["title"] != "Fix CI: test" || got[0]["status"] != "accepted" ||
		!strings.Contains(fmt.Sprint(got[0]["description"]), "URL: https://github.com/acme/widgets/runs/501") {
		t.Fatalf("follow-ups %v, want one accepted \"Fix CI: test\" with the run's URL", got)
	}
	for i, p := range []map[string]any{
		githubtest.CheckRunEvent(appRepo, 502, "test", "failure", "main", "s2"),                   // a repeat while it is open
		githubtest.CheckRunEvent(appRepo, 503, letagents.LeaseCheckName, "failure", "main", "s2"), // the board's own check
		githubtest.CheckRunEvent(appRepo, 504, "lint", "success", "main", "s2"),                   // passing
	} {
		e.deliver(t, "check_run", fmt.Sprintf("c-%d", i+2), p).want(t, 202, "")
	}
	if got := followUps(); len(got) != 1 {
		t.Errorf("follow-ups %v, want still one", got)
	}
	// Done, the next failure opens another.
	if _, err := e.db.Pool.Exec(t.Context(), `UPDATE tasks SET status = 'done' WHERE room_id = $1`, appRoom); err != nil {
		t.Fatal(err)
	}
	e.deliver(t, "check_run", "c-9", githubtest.CheckRunEvent(appRepo, 509, "test", "timed_out", "main", "s3")).want(t, 202, "")
	if got := followUps(); len(got) != 2 {
		t.Errorf("after the first was done: follow-ups %v, want two", got)
	}
}

// The original's install-url route answers the room's install link to
// the room's admins (GitHub's admins of the repository), at both its
// paths; without an App it is a 503.
func TestGitHubInstallURL(t *testing.T) {
	t.Parallel()
	for _, withApp := range []bool{true, false} {
		t.Run(map[bool]string{true: "app", false: "no app"}[withApp], func(t *testing.T) {
			t.Parallel()
			vars := map[string]string{"GITHUB_WEBHOOK_SECRET": hookSecret}
			if withApp {
				vars["GITHUB_APP_ID"], vars["GITHUB_APP_PRIVATE_KEY"], vars["GITHUB_APP_SLUG"] = appID, githubtest.AppKeyPEM(t), "letagents-test"
			}
			e := newAuthEnv(t, vars)
			e.gh.AddRepo(appRepo, false)
			e.gh.AddUser("carol")
			e.gh.AddUser("bob")
			e.gh.Grant(appRepo, "carol", "admin")
			e.gh.Grant(appRepo, "bob", "write")
			carol, bob := e.signIn(t, "carol"), e.signIn(t, "bob")
			e.as(t, carol, http.MethodPost, "/rooms/"+appRoom+"/join", "").want(t, 200, "")
			e.as(t, bob, http.MethodPost, "/rooms/"+appRoom+"/join", "").want(t, 200, "")
			for _, prefix := range []string{"", "/api"} {
				path := prefix + "/rooms/" + appRoom + "/integrations/github"
				e.as(t, bob, http.MethodPost, path+"/install-url", "").want(t, 403, "")
				if !withApp {
					e.as(t, carol, http.MethodPost, path+"/install-url", "").want(t, 503, "GitHub App install flow is not configured")
					continue
				}
				r := e.as(t, carol, http.MethodPost, path+"/install-url", "").want(t, 200, "")
				if r.str("room_id") != appRoom || r.str("state") != appRoom ||
					r.str("install_url") != "https://github.com/apps/letagents-test/installations/new?state=github.com%2Facme%2Fwidgets" ||
					!strings.HasSuffix(r.str("setup_url"), "/auth/github/app/callback") {
					t.Errorf("%s: %s", path, r.raw)
				}
				if got := e.as(t, bob, http.MethodGet, path, "").want(t, 200, ""); got.obj["configured"] != true || got.str("room_id") != appRoom {
					t.Errorf("GET %s: %s", path, got.raw)
				}
			}
		})
	}
}
