// Command clientrec records what the real agent clients give letagents:
// the environment an MCP server is started with, and the environment and
// stdin JSON of each hook. It runs Claude Code (`claude -p`), Codex
// (`codex exec`) and Gemini CLI (`gemini -p`) as installed from npm,
// each against a fake model API on loopback (localdev/fakemodel) that
// makes it call one tool of the MCP server, with the hooks written by
// `letagents hook install` (package hook) and a recording stand-in for
// the letagents binary: this program again, under the name letagents.
//
// The recordings become the fixtures that identity's and hook's tests
// read (mcp/identity/testdata/clients/<client>.json):
//
//	make record-clients      (go run ./localdev/clientrec -out mcp/identity/testdata/clients)
//
// Each client starts in a fresh HOME and project directory with a small
// known environment; in the fixtures, those directories, this program's
// path, PATH and the fake model's URL and key are replaced by names
// ($HOME, $PROJECT, …), so that they hold only the variables' names, the
// clients' own values, and the shapes of their inputs.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/letagents/letagents-go/localdev/fakemodel"
	"github.com/letagents/letagents-go/mcp/hook"
)

// stubName is the name the stand-in runs under, so that the hook
// commands are the ones `letagents hook install` writes.
const stubName = "letagents"

// toolName is the one tool the stand-in MCP server offers.
const toolName = "record_call"

func main() {
	if filepath.Base(os.Args[0]) == stubName {
		if err := stub(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "letagents (recording stand-in):", err)
			os.Exit(1)
		}
		return
	}
	out := flag.String("out", filepath.Join("mcp", "identity", "testdata", "clients"), "where the fixtures go")
	only := flag.String("clients", strings.Join(clientNames(), ","), "the clients to record, comma-separated")
	timeout := flag.Duration("timeout", 5*time.Minute, "how long one client may take")
	flag.Parse()
	ctx := context.Background()
	failed := false
	for _, name := range strings.Split(*only, ",") {
		c, ok := clients[strings.TrimSpace(name)]
		if !ok {
			fmt.Fprintf(os.Stderr, "clientrec: unknown client %q (want %s)\n", name, strings.Join(clientNames(), ", "))
			os.Exit(2)
		}
		if err := record(ctx, name, c, *out, *timeout); err != nil {
			fmt.Fprintf(os.Stderr, "clientrec: %s: %v\n", name, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// A recording is what one stand-in process saw.
type recording struct {
	Kind  string            `json:"kind"` // "mcp_server" or "hook"
	Args  []string          `json:"args"`
	Cwd   string            `json:"cwd"`
	Env   map[string]string `json:"env"`
	Input json.RawMessage   `json:"input,omitempty"` // a hook's stdin
	// Requests are the MCP requests an MCP server was sent.
	Requests []json.RawMessage `json:"requests,omitempty"`
	// Ancestors are the process and its ancestors, nearest first (on
	// Linux), for how a hook and an MCP server of one agent relate.
	Ancestors []process `json:"ancestors,omitempty"`
}

type process struct {
	PID  int    `json:"pid"`
	Name string `json:"name"`
}

// stub is the stand-in letagents: `letagents hook …` records its
// environment and stdin and prints nothing; `letagents` records its
// environment and serves a minimal MCP server with one tool. It writes
// into the records directory beside its bin directory.
func stub(args []string) error {
	dir := filepath.Join(filepath.Dir(filepath.Dir(os.Args[0])), "records")
	rec := recording{Kind: "mcp_server", Args: args, Env: map[string]string{}}
	rec.Cwd, _ = os.Getwd()
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		rec.Env[k] = v
	}
	rec.Ancestors = ancestors()
	if len(args) > 0 && args[0] == "hook" {
		rec.Kind = "hook"
		in, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		if json.Valid(in) {
			rec.Input = json.RawMessage(bytes.TrimSpace(in))
		} else if len(in) > 0 {
			rec.Input, _ = json.Marshal(string(in))
		}
		return save(dir, fmt.Sprintf("%d-%d-%s.json", time.Now().UnixNano(), os.Getpid(), rec.Kind), rec)
	}
	// The recording is rewritten after each request, so that what the
	// client sent is kept however the client ends the server.
	name := fmt.Sprintf("%d-%d-%s.json", time.Now().UnixNano(), os.Getpid(), rec.Kind)
	if err := save(dir, name, rec); err != nil {
		return err
	}
	return serveMCP(os.Stdin, os.Stdout, func(req json.RawMessage) error {
		rec.Requests = append(rec.Requests, req)
		return save(dir, name, rec)
	})
}

// ancestors reads the process tree from /proc: nil where there is none.
func ancestors() []process {
	var out []process
	for pid := os.Getpid(); pid > 1 && len(out) < 12; {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			break
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		open, close := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if open < 0 || close < open {
			break
		}
		out = append(out, process{PID: pid, Name: string(stat[open+1 : close])})
		var ppid int
		if _, err := fmt.Sscanf(string(stat[close+2:]), "%c %d", new(rune), &ppid); err != nil {
			break
		}
		pid = ppid
	}
	return out
}

func save(dir, name string, rec recording) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+name)
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

// serveMCP answers MCP over stdio (newline-delimited JSON-RPC) until
// stdin ends: initialize, tools/list (one tool), tools/call, ping.
func serveMCP(stdin io.Reader, stdout io.Writer, seen func(json.RawMessage) error) error {
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	enc := json.NewEncoder(stdout)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			continue
		}
		if err := seen(append(json.RawMessage(nil), sc.Bytes()...)); err != nil {
			return err
		}
		if req.ID == nil {
			continue // a notification
		}
		var result any
		switch req.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": req.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "letagents", "version": "recorder"}}
		case "tools/list":
			result = map[string]any{"tools": []any{map[string]any{"name": toolName, "description": "Records that it was called.",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{}}}}}
		case "tools/call":
			result = map[string]any{"content": []any{map[string]any{"type": "text", "text": "recorded"}}}
		case "ping":
			result = map[string]any{}
		default:
			if err := enc.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "method not found"}}); err != nil {
				return err
			}
			continue
		}
		if err := enc.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result}); err != nil {
			return err
		}
	}
	return sc.Err()
}

// A client is how one agent client is set up and run.
type client struct {
	// agent is its name for `letagents hook install --agent`.
	agent string
	// version prints its version.
	version []string
	// setup writes its configuration (besides the hooks) and returns
	// the command line and the environment it adds.
	setup func(w world) (argv []string, env []string, err error)
}

// world is one recording's directories and fake model.
type world struct {
	home, project, stub, modelURL string
}

const fakeKey = "fake-model-key"

const prompt = "Call the " + toolName + " tool once, then answer done."

var clients = map[string]client{
	"claude": {agent: "claude", version: []string{"claude", "--version"}, setup: func(w world) ([]string, []string, error) {
		cfg := filepath.Join(w.home, "mcp.json")
		data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"letagents": map[string]any{"command": w.stub}}})
		if err := os.WriteFile(cfg, data, 0o644); err != nil {
			return nil, nil, err
		}
		return []string{"claude", "-p", prompt, "--mcp-config", cfg, "--strict-mcp-config", "--allowedTools", "mcp__letagents__" + toolName},
			// Claude Code defers MCP tools behind its ToolSearch tool, which
			// the fake model does not drive: offer them at once.
			[]string{"ANTHROPIC_BASE_URL=" + w.modelURL, "ANTHROPIC_API_KEY=" + fakeKey, "ENABLE_TOOL_SEARCH=false"}, nil
	}},
	"codex": {agent: "codex", version: []string{"codex", "--version"}, setup: func(w world) ([]string, []string, error) {
		home := filepath.Join(w.home, ".codex")
		if err := os.MkdirAll(home, 0o755); err != nil {
			return nil, nil, err
		}
		toml := fakemodel.CodexConfig(w.modelURL, w.stub, w.project, nil)
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(toml), 0o644); err != nil {
			return nil, nil, err
		}
		// The hooks written are not reviewed here (that is /hooks in
		// Codex): this run is told to run them anyway.
		return []string{"codex", "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check", "-C", w.project, prompt},
			[]string{"CODEX_HOME=" + home, fakemodel.CodexKeyVar + "=" + fakeKey}, nil
	}},
	"gemini": {agent: "gemini", version: []string{"gemini", "--version"}, setup: func(w world) ([]string, []string, error) {
		user := map[string]any{"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}, "folderTrust": map[string]any{"enabled": false}},
			"general": map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true}, "privacy": map[string]any{"usageStatisticsEnabled": false}}
		if err := writeJSON(filepath.Join(w.home, ".gemini", "settings.json"), user); err != nil {
			return nil, nil, err
		}
		// The hooks are in the project's settings already; the MCP
		// server joins them there.
		path := filepath.Join(w.project, ".gemini", "settings.json")
		var settings map[string]any
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, err
		}
		if err := json.Unmarshal(raw, &settings); err != nil {
			return nil, nil, err
		}
		settings["mcpServers"] = map[string]any{"letagents": map[string]any{"command": w.stub, "trust": true}}
		if err := writeJSON(path, settings); err != nil {
			return nil, nil, err
		}
		return []string{"gemini", "-p", prompt, "--yolo"},
			[]string{"GOOGLE_GEMINI_BASE_URL=" + w.modelURL, "GEMINI_API_KEY=" + fakeKey}, nil
	}},
}

func clientNames() []string {
	var out []string
	for n := range clients {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Fixture is one client's recording as kept in testdata.
type Fixture struct {
	Client     string     `json:"client"`
	Version    string     `json:"version"`
	Command    []string   `json:"command"`
	MCPServers []Recorded `json:"mcp_servers"`
	Hooks      []Recorded `json:"hooks"`
}

// Recorded is one process the client started, made machine-neutral.
type Recorded struct {
	Args []string `json:"args,omitempty"`
	// Cwd is the directory the client started the process in: the
	// project's, for an MCP server, is what picks its room.
	Cwd   string            `json:"cwd"`
	Env   map[string]string `json:"env"`
	Input json.RawMessage   `json:"input,omitempty"`
	// Requests are the MCP requests an MCP server was sent.
	Requests []json.RawMessage `json:"mcp_requests,omitempty"`
	// Ancestors name the process's ancestors, nearest first (Linux).
	Ancestors []string `json:"ancestors,omitempty"`
	// MCPServerParentAt is, for a hook, the index in Ancestors of the
	// process that started the (first) MCP server, -1 for none.
	MCPServerParentAt *int `json:"mcp_server_parent_at,omitempty"`
}

func record(ctx context.Context, name string, c client, outDir string, timeout time.Duration) error {
	model, err := fakemodel.Start(fakemodel.Config{Script: []fakemodel.Step{{Tool: toolName}}})
	if err != nil {
		return err
	}
	defer model.Close()
	root, err := os.MkdirTemp("", "clientrec-"+name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	w := world{home: filepath.Join(root, "home"), project: filepath.Join(root, "project"), stub: filepath.Join(root, "bin", stubName), modelURL: model.URL}
	for _, d := range []string{w.home, w.project, filepath.Dir(w.stub), filepath.Join(root, "records")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.Symlink(self, w.stub); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "git", "-C", w.project, "init", "-q").CombinedOutput(); err != nil {
		return fmt.Errorf("git init: %v: %s", err, out)
	}
	var installed bytes.Buffer
	if err := hook.Install(hook.InstallConfig{Agent: c.agent, Dir: w.project, Command: w.stub}, &installed); err != nil {
		return err
	}
	argv, env, err := c.setup(w)
	if err != nil {
		return err
	}
	version, err := exec.CommandContext(ctx, c.version[0], c.version[1:]...).Output()
	if err != nil {
		return fmt.Errorf("%v: %w", c.version, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = w.project
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home, "LANG=C.UTF-8", "TERM=dumb"}, env...)
	cmd.Stdin = strings.NewReader("")
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	fmt.Fprintf(os.Stderr, "clientrec: running %s %q\n", name, argv)
	runErr := cmd.Run()
	fmt.Fprintf(os.Stderr, "clientrec: %s said:\n%s\n", name, output.String())
	recs, err := readRecords(filepath.Join(root, "records"))
	if err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("%s: %w (%d processes recorded)", argv[0], runErr, len(recs))
	}
	// Clients name per-project directories after the project's path
	// with '/' as '-'.
	neutral := strings.NewReplacer(root+"/home", "$HOME", root+"/project", "$PROJECT", w.stub, "$LETAGENTS", root, "$TMP",
		strings.ReplaceAll(root+"/project", "/", "-"), "-$PROJECT", model.URL, "$MODEL_URL", fakeKey, "$MODEL_KEY")
	path := os.Getenv("PATH")
	f := Fixture{Client: name, Version: strings.TrimSpace(string(version)), Command: neutralList(neutral, argv)}
	mcpParent := 0
	for _, r := range recs {
		if r.Kind == "mcp_server" && len(r.Ancestors) > 1 && mcpParent == 0 {
			mcpParent = r.Ancestors[1].PID
		}
	}
	for _, r := range recs {
		n := Recorded{Args: r.Args, Cwd: neutral.Replace(r.Cwd), Env: map[string]string{}}
		for _, req := range r.Requests {
			n.Requests = append(n.Requests, neutralJSON(neutral, req))
		}
		at := -1
		for i, a := range r.Ancestors {
			n.Ancestors = append(n.Ancestors, a.Name)
			if a.PID == mcpParent && at < 0 {
				at = i
			}
		}
		if r.Kind == "hook" {
			n.MCPServerParentAt = &at
		}
		for k, v := range r.Env {
			if k == "PATH" && strings.Contains(v, path) {
				v = strings.Replace(v, path, "$PATH", 1)
			}
			n.Env[k] = neutral.Replace(v)
			if secret(k) && n.Env[k] != "$MODEL_KEY" {
				n.Env[k] = "$REDACTED"
			}
		}
		if r.Input != nil {
			n.Input = json.RawMessage(neutralJSON(neutral, r.Input))
		}
		if r.Kind == "hook" {
			f.Hooks = append(f.Hooks, n)
		} else {
			f.MCPServers = append(f.MCPServers, n)
		}
	}
	if len(f.MCPServers) == 0 || len(f.Hooks) == 0 {
		return fmt.Errorf("recorded %d MCP servers and %d hooks: want both (hooks installed: %s)", len(f.MCPServers), len(f.Hooks), installed.String())
	}
	if !model.Contains(toolName) {
		return errors.New("the client never offered the tool to the model")
	}
	file := filepath.Join(outDir, name+".json")
	if err := writeJSON(file, f); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "clientrec: %s: %d MCP server starts, %d hook runs → %s\n", name, len(f.MCPServers), len(f.Hooks), file)
	return nil
}

// secret reports whether a variable's value may be a credential.
func secret(name string) bool {
	for _, w := range []string{"TOKEN", "SECRET", "KEY", "PASSWORD"} {
		if strings.Contains(strings.ToUpper(name), w) {
			return true
		}
	}
	return false
}

func readRecords(dir string) ([]recording, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") { // one being written
			names = append(names, e.Name())
		}
	}
	sort.Strings(names) // by time of recording
	var out []recording
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		var r recording
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// neutralJSON replaces machine-specific strings inside a JSON document's
// string values (encoding keeps them valid JSON).
func neutralJSON(r *strings.Replacer, raw json.RawMessage) []byte {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	v = neutralValue(r, v)
	out, _ := json.Marshal(v)
	return out
}

func neutralValue(r *strings.Replacer, v any) any {
	switch t := v.(type) {
	case string:
		return r.Replace(t)
	case []any:
		for i := range t {
			t[i] = neutralValue(r, t[i])
		}
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[r.Replace(k)] = neutralValue(r, e)
		}
		return out
	}
	return v
}

func neutralList(r *strings.Replacer, list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = r.Replace(s)
	}
	return out
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
