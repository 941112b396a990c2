package identity

import (
	"regexp"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/actors"
	"github.com/letagents/letagents-go/shared/letagents"
)

// envOf returns a getenv over m.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestResolveRuntimeKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"nothing set", nil, "instance:u-1"},
		{"blank values ignored", map[string]string{"CODEX_THREAD_ID": "  ", "MCP_SESSION_ID": ""}, "instance:u-1"},
		{"mcp session", map[string]string{"MCP_SESSION_ID": "m1"}, "mcp:m1"},
		{"claude over mcp", map[string]string{"CLAUDE_CODE_SESSION_ID": "c1", "MCP_SESSION_ID": "m1"}, "claude:c1"},
		{"claude code's own name", map[string]string{"CLAUDE_CODE_SESSION_ID": "c1"}, "claude:c1"},
		{"original's claude name", map[string]string{"CLAUDECODE_SESSION_ID": "c0"}, "claude:c0"},
		{"claude code's name over original's", map[string]string{"CLAUDE_CODE_SESSION_ID": "c1", "CLAUDECODE_SESSION_ID": "c0"}, "claude:c1"},
		{"original's claude name over mcp", map[string]string{"CLAUDECODE_SESSION_ID": "c0", "MCP_SESSION_ID": "m1"}, "claude:c0"},
		{"blank claude code name falls back", map[string]string{"CLAUDE_CODE_SESSION_ID": " ", "CLAUDECODE_SESSION_ID": "c0"}, "claude:c0"},
		{"antigravity over claude", map[string]string{"ANTIGRAVITY_THREAD_ID": "a1", "CLAUDE_CODE_SESSION_ID": "c1"}, "antigravity:a1"},
		{"codex over antigravity", map[string]string{"CODEX_THREAD_ID": "x1", "ANTIGRAVITY_THREAD_ID": "a1"}, "codex:x1"},
		{"explicit instance wins", map[string]string{"LETAGENTS_AGENT_INSTANCE_ID": "mine", "CODEX_THREAD_ID": "x1"}, "mine"},
		{"value trimmed", map[string]string{"CODEX_THREAD_ID": " x1\n"}, "codex:x1"},
		{"codex env without thread id", map[string]string{"CODEX_SHELL": "1"}, "instance:u-1"},
		{"gemini hook's session", map[string]string{"GEMINI_SESSION_ID": "g1"}, "gemini:g1"},
		{"claude over gemini", map[string]string{"CLAUDE_CODE_SESSION_ID": "c1", "GEMINI_SESSION_ID": "g1"}, "claude:c1"},
		{"gemini over mcp", map[string]string{"GEMINI_SESSION_ID": "g1", "MCP_SESSION_ID": "m1"}, "gemini:g1"},
		{"gemini cli without a client process", map[string]string{"GEMINI_CLI": "1"}, "instance:u-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Resolve(Inputs{Getenv: envOf(tt.env), InstanceUUID: "u-1"})
			if got.RuntimeKey != tt.want {
				t.Errorf("RuntimeKey = %q; want %q", got.RuntimeKey, tt.want)
			}
			// A hook process finds the same key, unless it is the process's own.
			key, ok := EnvRuntimeKey(envOf(tt.env))
			if fromEnv := tt.want != "instance:u-1"; ok != fromEnv || fromEnv && key != tt.want {
				t.Errorf("EnvRuntimeKey = %q, %v; want %q, %v", key, ok, tt.want, fromEnv)
			}
		})
	}
}

func TestResolveMakesInstanceUUID(t *testing.T) {
	t.Parallel()
	a, b := Resolve(Inputs{}), Resolve(Inputs{})
	re := regexp.MustCompile(`^instance:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !re.MatchString(a.RuntimeKey) {
		t.Errorf("RuntimeKey = %q; want instance:<uuid v4>", a.RuntimeKey)
	}
	if a.RuntimeKey == b.RuntimeKey {
		t.Errorf("two Resolves without InstanceUUID share RuntimeKey %q; want fresh UUIDs", a.RuntimeKey)
	}
}

func TestNewInstanceUUID(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 100 {
		u := NewInstanceUUID()
		if !re.MatchString(u) {
			t.Fatalf("NewInstanceUUID() = %q; want a version 4 UUID", u)
		}
		if seen[u] {
			t.Fatalf("NewInstanceUUID() repeated %q", u)
		}
		seen[u] = true
	}
}

func TestResolveIDELabel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"nothing", nil, "Agent"},
		{"explicit", map[string]string{"LETAGENTS_AGENT_IDE": "Zed", "CODEX_THREAD_ID": "x"}, "Zed"},
		{"short explicit", map[string]string{"AGENT_IDE": " Windsurf  Pro ", "CODEX_THREAD_ID": "x"}, "Windsurf Pro"},
		{"long explicit first", map[string]string{"LETAGENTS_AGENT_IDE": "Zed", "AGENT_IDE": "Vim"}, "Zed"},
		{"explicit cut to 40", map[string]string{"LETAGENTS_AGENT_IDE": strings.Repeat("x", 50)}, strings.Repeat("x", 40)},
		{"blank explicit ignored", map[string]string{"LETAGENTS_AGENT_IDE": "  ", "CODEX_CI": "1"}, "Codex"},
		{"codex thread", map[string]string{"CODEX_THREAD_ID": "x"}, "Codex"},
		{"codex shell", map[string]string{"CODEX_SHELL": "1"}, "Codex"},
		{"codex ci", map[string]string{"CODEX_CI": "1"}, "Codex"},
		{"codex originator", map[string]string{"CODEX_INTERNAL_ORIGINATOR_OVERRIDE": "x"}, "Codex"},
		{"codex over claude", map[string]string{"CODEX_SHELL": "1", "CLAUDECODE": "1"}, "Codex"},
		{"claudecode", map[string]string{"CLAUDECODE": "1"}, "Claude"},
		{"claude session", map[string]string{"CLAUDE_CODE_SESSION_ID": "s"}, "Claude"},
		{"original's claude session", map[string]string{"CLAUDECODE_SESSION_ID": "s"}, "Claude"},
		{"claude entrypoint", map[string]string{"CLAUDE_CODE_ENTRYPOINT": "cli"}, "Claude"},
		{"claude over gemini", map[string]string{"CLAUDECODE": "1", "GEMINI_CLI": "1"}, "Claude"},
		{"gemini", map[string]string{"GEMINI_CLI": "1"}, "Gemini"},
		{"gemini over cursor", map[string]string{"GEMINI_CLI": "1", "CURSOR_AGENT": "1"}, "Gemini"},
		{"cursor trace", map[string]string{"CURSOR_TRACE_ID": "t"}, "Cursor"},
		{"cursor agent", map[string]string{"CURSOR_AGENT": "1"}, "Cursor"},
		{"runtime env over name", map[string]string{"GEMINI_CLI": "1", "LETAGENTS_AGENT_NAME": "codex-1"}, "Gemini"},
		{"name codex", map[string]string{"LETAGENTS_AGENT_NAME": "codex-reviewer"}, "Codex"},
		{"name claude", map[string]string{"AGENT_NAME": "Claude Helper"}, "Claude"},
		{"name gemini", map[string]string{"LETAGENTS_AGENT_NAME": "gemini"}, "Gemini"},
		{"name antigravity", map[string]string{"LETAGENTS_AGENT_NAME": "AntigravityBot"}, "Antigravity"},
		{"name cursor", map[string]string{"LETAGENTS_AGENT_NAME": "cursor2"}, "Cursor"},
		{"name orchestrator", map[string]string{"LETAGENTS_AGENT_NAME": "orchestrator"}, "Orchestrator"},
		{"display name prefix", map[string]string{"LETAGENTS_AGENT_DISPLAY_NAME": "Codex Reviewer"}, "Codex"},
		{"name elsewhere", map[string]string{"LETAGENTS_AGENT_NAME": "my-codex"}, "Agent"},
		{"antigravity env alone", map[string]string{"ANTIGRAVITY_THREAD_ID": "a"}, "Agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Resolve(Inputs{Getenv: envOf(tt.env), InstanceUUID: "u"})
			if got.IDELabel != tt.want {
				t.Errorf("IDELabel = %q; want %q", got.IDELabel, tt.want)
			}
		})
	}
}

func TestResolveOwnerLabel(t *testing.T) {
	t.Parallel()
	full := Inputs{
		AccountLogin:       "ada",
		AccountDisplayName: "Ada Lovelace",
		GitUserName:        "A. Lovelace",
		GitUserEmail:       "ada.l@example.com",
		OSUser:             "alovelace",
	}
	tests := []struct {
		name string
		env  map[string]string
		edit func(*Inputs)
		want string
	}{
		{"env override", map[string]string{"LETAGENTS_AGENT_OWNER_LABEL": " Team  Blue "}, nil, "Team Blue"},
		{"account display name", nil, nil, "Ada Lovelace"},
		{"account login", nil, func(in *Inputs) { in.AccountDisplayName = " " }, "ada"},
		{"git user name", nil, func(in *Inputs) { in.AccountDisplayName, in.AccountLogin = "", "" }, "A. Lovelace"},
		{"git email local part", nil, func(in *Inputs) { in.AccountDisplayName, in.AccountLogin, in.GitUserName = "", "", "" }, "ada.l"},
		{"git email without at", nil, func(in *Inputs) {
			in.AccountDisplayName, in.AccountLogin, in.GitUserName, in.GitUserEmail = "", "", "", "ada"
		}, "ada"},
		{"git email empty local part", nil, func(in *Inputs) {
			in.AccountDisplayName, in.AccountLogin, in.GitUserName, in.GitUserEmail = "", "", "", "@example.com"
		}, "alovelace"},
		{"os user", nil, func(in *Inputs) {
			in.AccountDisplayName, in.AccountLogin, in.GitUserName, in.GitUserEmail = "", "", "", ""
		}, "alovelace"},
		{"windows os user", nil, func(in *Inputs) { *in = Inputs{OSUser: `CORP\ada`} }, "ada"},
		{"nothing", nil, func(in *Inputs) { *in = Inputs{} }, "owner"},
		{"pipe replaced", map[string]string{"LETAGENTS_AGENT_OWNER_LABEL": "Ada | Bob"}, nil, "Ada / Bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := full
			if tt.edit != nil {
				tt.edit(&in)
			}
			in.Getenv = envOf(tt.env)
			if got := Resolve(in).OwnerLabel; got != tt.want {
				t.Errorf("OwnerLabel = %q; want %q", got, tt.want)
			}
		})
	}
}

func TestResolveName(t *testing.T) {
	t.Parallel()
	const key = "codex:t1"
	codeDisplay, codeName := actors.Codename(key)
	stored := &Identity{RuntimeKey: key, Name: "old-name", DisplayName: "Old Name"}
	tests := []struct {
		name        string
		env         map[string]string
		stored      *Identity
		wantName    string
		wantDisplay string
	}{
		{"codename", nil, nil, codeName, codeDisplay},
		{"explicit name", map[string]string{"LETAGENTS_AGENT_NAME": "Builder Bot"}, stored, "builder-bot", "Builder Bot"},
		{"short explicit name", map[string]string{"AGENT_NAME": "helper"}, nil, "helper", "helper"},
		{"long name first", map[string]string{"LETAGENTS_AGENT_NAME": "first", "AGENT_NAME": "second"}, nil, "first", "first"},
		{"explicit name and display", map[string]string{"LETAGENTS_AGENT_NAME": "bb", "LETAGENTS_AGENT_DISPLAY_NAME": "Builder Bot"}, nil, "bb", "Builder Bot"},
		{"display alone", map[string]string{"LETAGENTS_AGENT_DISPLAY_NAME": "Review Owl"}, stored, "review-owl", "Review Owl"},
		{"unsluggable name falls through to display", map[string]string{"LETAGENTS_AGENT_NAME": "!!!", "LETAGENTS_AGENT_DISPLAY_NAME": "Owl"}, nil, "owl", "Owl"},
		{"unsluggable name falls through to stored", map[string]string{"LETAGENTS_AGENT_NAME": "★★"}, stored, "old-name", "Old Name"},
		{"unsluggable name falls through to codename", map[string]string{"LETAGENTS_AGENT_NAME": "---"}, nil, codeName, codeDisplay},
		{"unsluggable display falls through", map[string]string{"LETAGENTS_AGENT_DISPLAY_NAME": "★"}, nil, codeName, codeDisplay},
		{"over-long name cut", map[string]string{"LETAGENTS_AGENT_NAME": strings.Repeat("a", 70)}, nil, strings.Repeat("a", 64), strings.Repeat("a", 64)},
		{"stored", nil, stored, "old-name", "Old Name"},
		{"stored without display", nil, &Identity{RuntimeKey: key, Name: "old-name"}, "old-name", "old-name"},
		{"stored without key", nil, &Identity{Name: "old-name", DisplayName: "Old"}, "old-name", "Old"},
		{"stored for another key", nil, &Identity{RuntimeKey: "codex:t2", Name: "old-name"}, codeName, codeDisplay},
		{"stored without name", nil, &Identity{RuntimeKey: key, DisplayName: "Old"}, codeName, codeDisplay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"CODEX_THREAD_ID": "t1"}
			for k, v := range tt.env {
				env[k] = v
			}
			got := Resolve(Inputs{Getenv: envOf(env), Stored: tt.stored, TakenNames: []string{"old-name", "builder-bot", "helper"}})
			if got.Name != tt.wantName || got.DisplayName != tt.wantDisplay {
				t.Errorf("Name, DisplayName = %q, %q; want %q, %q", got.Name, got.DisplayName, tt.wantName, tt.wantDisplay)
			}
			if slug, err := letagents.AgentName(got.Name); err != nil || slug != got.Name {
				t.Errorf("letagents.AgentName(%q) = %q, %v; want it unchanged", got.Name, slug, err)
			}
		})
	}
}

func TestResolveActorLabel(t *testing.T) {
	t.Parallel()
	got := Resolve(Inputs{
		Getenv:             envOf(map[string]string{"CODEX_THREAD_ID": "t1", "LETAGENTS_AGENT_NAME": "RiverValley"}),
		AccountDisplayName: "James",
	})
	if want := "RiverValley | James' agent | Codex"; got.ActorLabel != want {
		t.Errorf("ActorLabel = %q; want %q", got.ActorLabel, want)
	}
}

func TestResolveCanonicalKey(t *testing.T) {
	t.Parallel()
	const key = "codex:t1"
	tests := []struct {
		name   string
		env    map[string]string
		login  string
		stored *Identity
		want   string
	}{
		{"no stored identity", nil, "ada", nil, ""},
		{"stored, same login", nil, "ada", &Identity{RuntimeKey: key, Name: "owl", CanonicalKey: "ada/owl"}, "ada/owl"},
		{"stored, login case differs", nil, "Ada", &Identity{RuntimeKey: key, Name: "owl", CanonicalKey: "ada/owl"}, "ada/owl"},
		{"stored, signed out", nil, "", &Identity{RuntimeKey: key, Name: "owl", CanonicalKey: "ada/owl"}, "ada/owl"},
		{"stored, other login", nil, "bob", &Identity{RuntimeKey: key, Name: "owl", CanonicalKey: "ada/owl"}, ""},
		{"stored, never registered", nil, "ada", &Identity{RuntimeKey: key, Name: "owl"}, ""},
		{"explicit name differs", map[string]string{"LETAGENTS_AGENT_NAME": "hawk"}, "ada", &Identity{RuntimeKey: key, Name: "owl", CanonicalKey: "ada/owl"}, ""},
		{"explicit name same", map[string]string{"LETAGENTS_AGENT_NAME": "Owl"}, "ada", &Identity{RuntimeKey: key, Name: "owl", CanonicalKey: "ada/owl"}, "ada/owl"},
		{"stored for another key", nil, "ada", &Identity{RuntimeKey: "codex:t2", Name: "owl", CanonicalKey: "ada/owl"}, ""},
		{"malformed key", nil, "ada", &Identity{RuntimeKey: key, Name: "owl", CanonicalKey: "owl"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"CODEX_THREAD_ID": "t1"}
			for k, v := range tt.env {
				env[k] = v
			}
			got := Resolve(Inputs{Getenv: envOf(env), AccountLogin: tt.login, Stored: tt.stored})
			if got.CanonicalKey != tt.want {
				t.Errorf("CanonicalKey = %q; want %q", got.CanonicalKey, tt.want)
			}
		})
	}
}

// TestResolveLabelsFit checks that whatever the environment holds, the
// actor label is a valid message sender.
func TestResolveLabelsFit(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 200)
	got := Resolve(Inputs{
		Getenv: envOf(map[string]string{
			"LETAGENTS_AGENT_NAME":         strings.Repeat("Name ", 50),
			"LETAGENTS_AGENT_DISPLAY_NAME": long + "\x00\t|",
			"LETAGENTS_AGENT_IDE":          long,
			"LETAGENTS_AGENT_OWNER_LABEL":  long,
		}),
		InstanceUUID: "u",
	})
	if len(got.ActorLabel) > letagents.MaxSenderBytes {
		t.Errorf("len(ActorLabel) = %d; want at most %d", len(got.ActorLabel), letagents.MaxSenderBytes)
	}
	for field, v := range map[string]string{"DisplayName": got.DisplayName, "OwnerLabel": got.OwnerLabel, "IDELabel": got.IDELabel} {
		if clean, err := letagents.Label(field, v, ""); err != nil || clean != v || v == "" {
			t.Errorf("%s = %q: letagents.Label = %q, %v; want it valid and unchanged", field, v, clean, err)
		}
	}
	if d, o, i := actors.ParseActorLabel(got.ActorLabel); d != got.DisplayName || o != got.OwnerLabel || i != got.IDELabel {
		t.Errorf("actors.ParseActorLabel(%q) = %q, %q, %q; want the resolved parts back", got.ActorLabel, d, o, i)
	}
	if slug, err := letagents.AgentName(got.Name); err != nil || slug != got.Name {
		t.Errorf("letagents.AgentName(%q) = %q, %v; want it unchanged", got.Name, slug, err)
	}
}

func TestResolveNilGetenv(t *testing.T) {
	t.Parallel()
	got := Resolve(Inputs{InstanceUUID: "u"})
	display, name := actors.Codename("instance:u")
	want := Identity{
		RuntimeKey:  "instance:u",
		Name:        name,
		DisplayName: display,
		OwnerLabel:  "owner",
		IDELabel:    "Agent",
		ActorLabel:  display + " | owner's agent | Agent",
	}
	if got != want {
		t.Errorf("Resolve(no env) = %+v; want %+v", got, want)
	}
	if key, ok := EnvRuntimeKey(nil); ok || key != "" {
		t.Errorf("EnvRuntimeKey(nil) = %q, %v; want none", key, ok)
	}
}

func TestRenamed(t *testing.T) {
	t.Parallel()
	base := Identity{RuntimeKey: "k", Name: "rivervalley", DisplayName: "RiverValley", OwnerLabel: "Ada", IDELabel: "Codex",
		ActorLabel: "RiverValley | Ada's agent | Codex", CanonicalKey: "ada/rivervalley"}
	tests := []struct {
		name, give          string
		wantName, wantShown string
		wantErr             bool
	}{
		{"plain", "Builder", "builder", "Builder", false},
		{"spaces and case", "  Code Reviewer  ", "code-reviewer", "Code Reviewer", false},
		{"separator kept out of the label", "a|b", "a-b", "a/b", false},
		{"nothing to slug", "!!", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Renamed(base, tt.give)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Renamed(%q) = %+v; want an error", tt.give, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantLabel := actors.ActorLabel(tt.wantShown, "Ada", "Codex")
			if got.Name != tt.wantName || got.DisplayName != tt.wantShown || got.ActorLabel != wantLabel || got.CanonicalKey != "" ||
				got.RuntimeKey != "k" || got.OwnerLabel != "Ada" || got.IDELabel != "Codex" {
				t.Errorf("Renamed(%q) = %+v; want name %q, display %q, label %q, no canonical key, the rest kept",
					tt.give, got, tt.wantName, tt.wantShown, wantLabel)
			}
		})
	}
}
