package identity

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fixture is one client's recording (localdev/clientrec, `make
// record-clients`): what the real client gave the MCP server and each
// hook it ran.
type fixture struct {
	Client     string     `json:"client"`
	Version    string     `json:"version"`
	MCPServers []recorded `json:"mcp_servers"`
	Hooks      []recorded `json:"hooks"`
}

type recorded struct {
	Args     []string          `json:"args"`
	Env      map[string]string `json:"env"`
	Input    json.RawMessage   `json:"input"`
	Requests []struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	} `json:"mcp_requests"`
	Ancestors         []string `json:"ancestors"`
	MCPServerParentAt *int     `json:"mcp_server_parent_at"`
}

func loadFixture(t *testing.T, client string) fixture {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "clients", client+".json"))
	if err != nil {
		t.Fatalf("read the %s recording (make record-clients writes it): %v", client, err)
	}
	var f fixture
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s recording: %v", client, err)
	}
	if len(f.MCPServers) == 0 || len(f.Hooks) == 0 {
		t.Fatalf("%s recording has %d MCP servers and %d hooks; want both", client, len(f.MCPServers), len(f.Hooks))
	}
	return f
}

// agentOf is one agent of a recorded client: its recording with the
// session id the client made (Codex's thread id is the same) replaced by
// the agent's own, and the process its client runs in.
type agentOf struct {
	f       fixture
	process string
}

// renamed is f with the recorded session id replaced by id throughout.
func renamed(t *testing.T, f fixture, id string) fixture {
	t.Helper()
	var in struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(f.Hooks[0].Input, &in); err != nil || in.SessionID == "" {
		t.Fatalf("%s: the first hook's input has no session_id (%v): %s", f.Client, err, f.Hooks[0].Input)
	}
	data, _ := json.Marshal(f)
	var out fixture
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(data), in.SessionID, id)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// serverKey is the key the agent's MCP server saves its sessions under:
// its runtime key, or the key its tool calls' _meta name when its
// environment names none (what the server's learnRuntimeKey does).
func (a agentOf) serverKey(t *testing.T) string {
	t.Helper()
	m := a.f.MCPServers[0]
	key := Resolve(Inputs{Getenv: envOf(m.Env), InstanceUUID: "u-" + a.process, ClientProcess: a.process}).RuntimeKey
	if _, ok := EnvRuntimeKey(envOf(m.Env)); ok {
		return key
	}
	for _, r := range m.Requests {
		if r.Method != "tools/call" {
			continue
		}
		if k, ok := MetaRuntimeKey(r.Params.Meta); ok {
			key = k
		}
	}
	return key
}

// hookKeys are the keys a hook run of the agent looks its session up by.
// Its parent is the agent's client when the recording says so, else a
// process in between (a shell), whose key no MCP server saves.
func (a agentOf) hookKeys(t *testing.T, h recorded) []string {
	t.Helper()
	var in struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(h.Input, &in); err != nil {
		t.Fatalf("%s hook %v input: %v", a.f.Client, h.Args, err)
	}
	parent := a.process + "-shell"
	if h.MCPServerParentAt != nil && *h.MCPServerParentAt == 1 {
		parent = a.process
	}
	return HookRuntimeKeys(envOf(h.Env), in.SessionID, parent)
}

// TestRecordedClientsPairMCPServerAndHooks holds every recorded client
// to the rule hooks depend on: the MCP server and every hook of one agent
// agree on a key, and that key is no other agent's, with two agents of
// the same client on one machine.
func TestRecordedClientsPairMCPServerAndHooks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		client string
		// keyFrom says where the server's key comes from.
		keyFrom string
		ide     string
	}{
		{"claude", "claude:", "Claude"},
		{"codex", "codex:", "Agent"}, // Codex gives its MCP servers no variable of its own
		{"gemini", "process:", "Gemini"},
	}
	for _, tt := range tests {
		t.Run(tt.client, func(t *testing.T) {
			t.Parallel()
			f := loadFixture(t, tt.client)
			alpha := agentOf{renamed(t, f, "11111111-aaaa-4aaa-8aaa-111111111111"), "process:1001@5"}
			gamma := agentOf{renamed(t, f, "22222222-bbbb-4bbb-8bbb-222222222222"), "process:1002@6"}
			ka, kg := alpha.serverKey(t), gamma.serverKey(t)
			if !strings.HasPrefix(ka, tt.keyFrom) {
				t.Errorf("%s %s: MCP server key = %q; want one from %q", tt.client, f.Version, ka, tt.keyFrom)
			}
			if ka == kg {
				t.Fatalf("two agents share the key %q", ka)
			}
			for _, h := range alpha.f.Hooks {
				keys := alpha.hookKeys(t, h)
				if !slices.Contains(keys, ka) {
					t.Errorf("hook %v looks under %q; its MCP server saved under %q", h.Args, keys, ka)
				}
				if slices.Contains(keys, kg) {
					t.Errorf("hook %v of alpha looks under %q, which holds gamma's sessions", h.Args, kg)
				}
			}
			for _, h := range gamma.f.Hooks {
				if keys := gamma.hookKeys(t, h); slices.Contains(keys, ka) {
					t.Errorf("hook %v of gamma looks under %q, which holds alpha's sessions", h.Args, ka)
				}
			}
			if got := Resolve(Inputs{Getenv: envOf(f.MCPServers[0].Env)}).IDELabel; got != tt.ide {
				t.Errorf("IDELabel of the MCP server = %q; want %q", got, tt.ide)
			}
		})
	}
}

func TestProcessKey(t *testing.T) {
	t.Parallel()
	self := ProcessKey(os.Getpid())
	tests := []struct {
		name string
		pid  int
		want func(string) bool
	}{
		{"no process", 0, func(k string) bool { return k == "" }},
		{"init is no client", 1, func(k string) bool { return k == "" }},
		{"this process", os.Getpid(), func(k string) bool {
			return strings.HasPrefix(k, "process:"+itoa(os.Getpid())) && k == self
		}},
		{"a process that is gone", 1 << 30, func(k string) bool { return k == "process:"+itoa(1<<30) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ProcessKey(tt.pid); !tt.want(got) {
				t.Errorf("ProcessKey(%d) = %q", tt.pid, got)
			}
		})
	}
}

func TestProcessRuntimeKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		process string
		want    string
	}{
		{"gemini cli's mcp server", map[string]string{"GEMINI_CLI": "1"}, "process:7@9", "process:7@9"},
		{"a session id wins", map[string]string{"GEMINI_CLI": "1", "GEMINI_SESSION_ID": "g1"}, "process:7@9", "gemini:g1"},
		// Unknown clients may serve many agents from one process.
		{"unknown client", nil, "process:7@9", "instance:u-1"},
		{"claude code", map[string]string{"CLAUDECODE": "1"}, "process:7@9", "instance:u-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Resolve(Inputs{Getenv: envOf(tt.env), InstanceUUID: "u-1", ClientProcess: tt.process}).RuntimeKey; got != tt.want {
				t.Errorf("RuntimeKey = %q; want %q", got, tt.want)
			}
		})
	}
}

func TestMetaRuntimeKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		meta map[string]any
		want string
	}{
		{"codex thread", map[string]any{"threadId": "t1", "sessionId": "t1", "progressToken": 1}, "codex:t1"},
		{"none", nil, ""},
		{"progress only (claude, gemini)", map[string]any{"progressToken": "x"}, ""},
		{"blank", map[string]any{"threadId": " "}, ""},
		{"not a string", map[string]any{"threadId": 5}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := MetaRuntimeKey(tt.meta)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("MetaRuntimeKey = %q, %v; want %q", got, ok, tt.want)
			}
		})
	}
}

func TestHookRuntimeKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		env       map[string]string
		sessionID string
		process   string
		want      []string
	}{
		{"nothing", nil, "", "", nil},
		{"claude", map[string]string{"CLAUDE_CODE_SESSION_ID": "s"}, "s", "process:3",
			[]string{"claude:s", "codex:s", "gemini:s", "process:3"}},
		{"input only", nil, "s", "", []string{"claude:s", "codex:s", "gemini:s"}},
		{"explicit instance first", map[string]string{"LETAGENTS_AGENT_INSTANCE_ID": "mine"}, "s", "",
			[]string{"mine", "claude:s", "codex:s", "gemini:s"}},
		{"process only", nil, "", "process:3@1", []string{"process:3@1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := HookRuntimeKeys(envOf(tt.env), tt.sessionID, tt.process); !slices.Equal(got, tt.want) {
				t.Errorf("HookRuntimeKeys = %q; want %q", got, tt.want)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
