package doctor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Codex decides itself which hooks run (project trust, each hook's
// review by its hash, the feature switch), and its app-server says so:
// the doctor asks it rather than reading config.toml and recomputing
// hashes that change with Codex. What Codex 0.171.0 answers is recorded
// in testdata/codex-0.171.0.

// codexView is what Codex says of a directory.
type codexView struct {
	Config codexConfig
	// Hooks are the hooks Codex would run there, with their review.
	Hooks []codexHook
	// Problems are Codex's warnings and errors about hook files.
	Problems []string
}

// codexConfig is the part of Codex's effective configuration (config/read)
// the doctor reads.
type codexConfig struct {
	Projects map[string]struct {
		TrustLevel string `json:"trust_level"`
	} `json:"projects"`
	Features struct {
		Hooks *bool `json:"hooks"`
		// CodexHooks is the deprecated name of Hooks.
		CodexHooks *bool `json:"codex_hooks"`
	} `json:"features"`
	MCPServers map[string]codexMCPServer `json:"mcp_servers"`
}

// hooksOn is Codex's hooks switch: on unless [features] turns it off.
func (c codexConfig) hooksOn() bool {
	switch {
	case c.Features.Hooks != nil:
		return *c.Features.Hooks
	case c.Features.CodexHooks != nil:
		return *c.Features.CodexHooks
	}
	return true
}

// codexMCPServer is an [mcp_servers.<name>] entry.
type codexMCPServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	// EnvVars are the variables passed on from Codex's own environment
	// (names, or {"name": …} objects).
	EnvVars []json.RawMessage `json:"env_vars"`
	Enabled *bool             `json:"enabled"`
}

// passed are the variables the entry passes on from Codex's own
// environment (env_vars: names, or {"name": …} objects).
func (s codexMCPServer) passed() []string {
	var out []string
	for _, raw := range s.EnvVars {
		var name string
		if json.Unmarshal(raw, &name) != nil {
			var o struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(raw, &o) != nil {
				continue
			}
			name = o.Name
		}
		out = append(out, name)
	}
	return out
}

// codexHook is one entry of hooks/list.
type codexHook struct {
	Key         string `json:"key"`
	EventName   string `json:"eventName"`
	Command     string `json:"command"`
	SourcePath  string `json:"sourcePath"`
	Source      string `json:"source"`
	Enabled     bool   `json:"enabled"`
	IsManaged   bool   `json:"isManaged"`
	TrustStatus string `json:"trustStatus"` // managed, trusted, untrusted or modified
	// CurrentHash is what a review records as trusted_hash.
	CurrentHash string `json:"currentHash"`
}

// runs reports whether Codex runs the hook.
func (h codexHook) runs() bool {
	return h.Enabled && (h.TrustStatus == "trusted" || h.TrustStatus == "managed")
}

// askCodex starts `bin app-server` in dir (JSON-RPC lines on stdio) and
// asks it for the effective configuration and the hooks of dir. ctx
// bounds the whole exchange; the process is killed on return.
func askCodex(ctx context.Context, bin, dir string, environ []string) (codexView, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "app-server")
	cmd.Dir, cmd.Env = dir, environ
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return codexView{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return codexView{}, err
	}
	var stderr tail
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return codexView{}, fmt.Errorf("start %s app-server: %w", bin, err)
	}
	defer func() {
		stdin.Close()
		cancel()
		_ = cmd.Wait() // killed: its status says nothing
	}()
	rpc := &codexRPC{in: stdin, out: bufio.NewReaderSize(stdout, 64<<10)}
	fail := func(err error) (codexView, error) {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			err = fmt.Errorf("%w (codex said: %s)", err, msg)
		}
		return codexView{}, fmt.Errorf("ask %s app-server: %w", bin, err)
	}
	init := map[string]any{"clientInfo": map[string]string{"name": "letagents-doctor", "version": "1"},
		"capabilities": map[string]bool{"experimentalApi": true}}
	if err := rpc.call("initialize", init, nil); err != nil {
		return fail(err)
	}
	if err := rpc.notify("initialized"); err != nil {
		return fail(err)
	}
	var view codexView
	var read struct {
		Config codexConfig `json:"config"`
	}
	if err := rpc.call("config/read", map[string]any{"cwd": dir}, &read); err != nil {
		return fail(err)
	}
	view.Config = read.Config
	var list struct {
		Data []struct {
			Hooks    []codexHook `json:"hooks"`
			Warnings []string    `json:"warnings"`
			Errors   []struct {
				Message string `json:"message"`
				Path    string `json:"path"`
			} `json:"errors"`
		} `json:"data"`
	}
	if err := rpc.call("hooks/list", map[string]any{"cwds": []string{dir}}, &list); err != nil {
		return fail(err)
	}
	for _, entry := range list.Data {
		view.Hooks = append(view.Hooks, entry.Hooks...)
		view.Problems = append(view.Problems, entry.Warnings...)
		for _, e := range entry.Errors {
			view.Problems = append(view.Problems, e.Path+": "+e.Message)
		}
	}
	return view, nil
}

// codexRPC is a JSON-RPC 2.0 exchange over the app-server's stdio, one
// message a line, one call at a time.
type codexRPC struct {
	in   io.Writer
	out  *bufio.Reader
	next int
}

func (r *codexRPC) notify(method string) error {
	return r.write(map[string]any{"jsonrpc": "2.0", "method": method})
}

func (r *codexRPC) write(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = r.in.Write(append(b, '\n'))
	return err
}

// call sends a request and reads lines until its answer, skipping the
// notifications the server sends meanwhile.
func (r *codexRPC) call(method string, params, result any) error {
	r.next++
	id := r.next
	if err := r.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	for {
		line, err := r.out.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("%s: no answer: %w", method, err)
		}
		var msg struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(bytes.TrimSpace(line), &msg) != nil || msg.ID == nil || *msg.ID != id {
			continue
		}
		if msg.Error != nil {
			return fmt.Errorf("%s: %s", method, msg.Error.Message)
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(msg.Result, result); err != nil {
			return fmt.Errorf("%s: the answer is not what Codex 0.171 sends: %w", method, err)
		}
		return nil
	}
}

// tail keeps the last few KiB written to it: what a failing codex said.
// exec copies stderr into it while the exchange may read it.
type tail struct {
	mu sync.Mutex
	b  []byte
}

const tailMax = 4 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > tailMax {
		t.b = t.b[len(t.b)-tailMax:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
