// Package fakemodel is a model API on loopback for the real agent clients
// (Claude Code, Codex, Gemini CLI), so that they can run here without a
// model: start MCP servers, run hooks, call a tool, and send what the
// hooks added to their context to the "model", where a caller reads it.
//
// It speaks just enough of each wire: Anthropic's Messages API (POST
// /v1/messages, streamed as server-sent events or not), OpenAI's
// Responses API (POST /v1/responses, server-sent events) and Gemini's
// generateContent / streamGenerateContent. A conversation's turns follow
// Config.Script: the turn after n tool results makes the script's call n
// (clients send the whole conversation each turn, so the count is in the
// request); once the script is done, and for every request that offers
// no such tool (a client's side questions), the answer is "done".
package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Config says what the fake model does.
type Config struct {
	// Script is the tool calls a conversation makes, in order.
	Script []Step
}

// Step is one tool call of a Script.
type Step struct {
	// Tool is the suffix of the tool's name (clients prefix an MCP
	// server's tools with its name, each its own way).
	Tool string
	// Args are its arguments (nil for none).
	Args map[string]any
	// Before, when set, runs before the call is answered: what happens
	// in the world between two turns (a person posts a message).
	Before func()
}

// Server is a running fake model API.
type Server struct {
	// URL is its base URL, http://127.0.0.1:PORT.
	URL string
	cfg Config
	srv *http.Server
	mu  sync.Mutex
	log []Request
}

// Request is one request a client made, for the caller to read.
type Request struct {
	Method, Path string
	Body         []byte
}

// Start listens on a free loopback port and serves until Close.
func Start(cfg Config) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fake model: listen: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), cfg: cfg}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go s.srv.Serve(ln) //nolint:errcheck // ends with Close
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Requests are the requests made so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Contains reports whether any request body made so far holds text
// (as JSON-encoded: quotes and newlines escaped).
func (s *Server) Contains(text string) bool {
	enc, _ := json.Marshal(text)
	needle := enc[1 : len(enc)-1]
	for _, r := range s.Requests() {
		if bytes.Contains(r.Body, needle) {
			return true
		}
	}
	return false
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	s.mu.Lock()
	s.log = append(s.log, Request{Method: r.Method, Path: r.URL.Path, Body: body})
	s.mu.Unlock()
	switch p := r.URL.Path; {
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/messages/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": 10})
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/v1/messages"):
		s.anthropic(w, body)
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/responses"):
		s.responses(w, body)
	case r.Method == http.MethodPost && strings.Contains(p, ":countTokens"):
		writeJSON(w, map[string]any{"totalTokens": 10})
	case r.Method == http.MethodPost && strings.Contains(p, ":streamGenerateContent"):
		s.gemini(w, body, true)
	case r.Method == http.MethodPost && strings.Contains(p, ":generateContent"):
		s.gemini(w, body, false)
	case strings.HasSuffix(p, "/models"):
		writeJSON(w, map[string]any{"data": []any{}, "models": []any{}})
	default:
		http.Error(w, `{"error":{"message":"not faked"}}`, http.StatusNotFound)
	}
}

// next is the call a turn makes, after done tool results, among the
// tools offered (names): the script's step and the tool's full name, or
// false when the script is done or the tool is not offered.
func (s *Server) next(done int, names []string) (Step, string, bool) {
	if done >= len(s.cfg.Script) {
		return Step{}, "", false
	}
	step := s.cfg.Script[done]
	for _, n := range names {
		if strings.HasSuffix(n, step.Tool) {
			if step.Before != nil {
				step.Before()
			}
			if step.Args == nil {
				step.Args = map[string]any{}
			}
			return step, n, true
		}
	}
	return Step{}, "", false
}

const answer = "done"

func (s *Server) anthropic(w http.ResponseWriter, body []byte) {
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
		Tools  []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &req)
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	done := bytes.Count(body, []byte(`"type":"tool_result"`))
	step, tool, call := s.next(done, names)
	id := fmt.Sprintf("toolu_fake%d", done+1)
	block := map[string]any{"type": "text", "text": answer}
	stop := "end_turn"
	if call {
		block = map[string]any{"type": "tool_use", "id": id, "name": tool, "input": step.Args}
		stop = "tool_use"
	}
	usage := map[string]any{"input_tokens": 10, "output_tokens": 1}
	msg := map[string]any{"id": "msg_fake", "type": "message", "role": "assistant", "model": req.Model,
		"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage}
	if !req.Stream {
		writeJSON(w, msg)
		return
	}
	sse := newSSE(w)
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	sse.event("message_start", map[string]any{"type": "message_start", "message": start})
	if call {
		args, _ := json.Marshal(step.Args)
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": id, "name": tool, "input": map[string]any{}}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(args)}})
	} else {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": answer}})
	}
	sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1}})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}

func (s *Server) responses(w http.ResponseWriter, body []byte) {
	var req struct {
		Model string `json:"model"`
		Tools []struct {
			Name  string `json:"name"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &req)
	// A namespace's tools (Codex puts each MCP server's in one) are
	// called by name within their namespace.
	var names []string
	namespace := map[string][2]string{}
	for _, t := range req.Tools {
		names = append(names, t.Name)
		namespace[t.Name] = [2]string{"", t.Name}
		for _, n := range t.Tools {
			names = append(names, t.Name+n.Name)
			namespace[t.Name+n.Name] = [2]string{t.Name, n.Name}
		}
	}
	done := bytes.Count(body, []byte(`"type":"function_call_output"`))
	step, tool, call := s.next(done, names)
	item := map[string]any{"type": "message", "id": "msg_fake", "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": answer, "annotations": []any{}}}}
	if call {
		args, _ := json.Marshal(step.Args)
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_fake%d", done+1), "call_id": fmt.Sprintf("call_fake%d", done+1),
			"name": namespace[tool][1], "arguments": string(args), "status": "completed"}
		if ns := namespace[tool][0]; ns != "" {
			item["namespace"] = ns
		}
	}
	resp := map[string]any{"id": "resp_fake", "object": "response", "model": req.Model, "status": "completed", "output": []any{item},
		"usage": map[string]any{"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 1, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 11}}
	sse := newSSE(w)
	sse.event("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_fake", "status": "in_progress"}})
	sse.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	sse.event("response.completed", map[string]any{"type": "response.completed", "response": resp})
}

func (s *Server) gemini(w http.ResponseWriter, body []byte, stream bool) {
	var req struct {
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		GenerationConfig struct {
			ResponseMIMEType string `json:"responseMimeType"`
		} `json:"generationConfig"`
	}
	_ = json.Unmarshal(body, &req)
	var names []string
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			names = append(names, f.Name)
		}
	}
	step, tool, call := s.next(bytes.Count(body, []byte(`"functionResponse"`)), names)
	part := map[string]any{"text": answer}
	switch {
	case call:
		part = map[string]any{"functionCall": map[string]any{"name": tool, "args": step.Args}}
	case req.GenerationConfig.ResponseMIMEType == "application/json":
		// The client's side questions (which model to route to, who
		// speaks next) want JSON: a simple task, and "the user" ends the
		// turn.
		part = map[string]any{"text": `{"next_speaker":"user","reasoning":"done","complexity_reasoning":"simple","complexity_score":1}`}
	}
	resp := map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11},
		"modelVersion":  "fake",
	}
	if !stream {
		writeJSON(w, resp)
		return
	}
	newSSE(w).event("", resp)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

type sseWriter struct{ w http.ResponseWriter }

func newSSE(w http.ResponseWriter) sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	return sseWriter{w}
}

// event writes one event (no "event:" line when name is "").
func (s sseWriter) event(name string, data any) {
	b, _ := json.Marshal(data)
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// CodexKeyVar is the variable CodexConfig has Codex read its API key
// from: set it, to anything, in codex's environment.
const CodexKeyVar = "FAKE_MODEL_KEY"

// CodexConfig is a $CODEX_HOME/config.toml that points Codex at the fake
// at modelURL (its Responses API), runs command as the letagents MCP
// server with env (none when empty) and its tools pre-approved (codex
// exec refuses unapproved MCP calls under approval_policy "never"), and
// trusts project, as a person who ran Codex there would have.
func CodexConfig(modelURL, command, project string, env map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "model = \"fake-model\"\nmodel_provider = \"fake\"\napproval_policy = \"never\"\n\n"+
		"[model_providers.fake]\nname = \"fake\"\nbase_url = %q\nenv_key = %q\nwire_api = \"responses\"\n\n"+
		"[mcp_servers.letagents]\ncommand = %q\ndefault_tools_approval_mode = \"approve\"\n", modelURL+"/v1", CodexKeyVar, command)
	if len(env) > 0 {
		var pairs []string
		for _, k := range slices.Sorted(maps.Keys(env)) {
			pairs = append(pairs, fmt.Sprintf("%s = %q", k, env[k]))
		}
		fmt.Fprintf(&b, "env = { %s }\n", strings.Join(pairs, ", "))
	}
	fmt.Fprintf(&b, "\n[projects.%q]\ntrust_level = \"trusted\"\n", project)
	return b.String()
}
