package fakemodel

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestScript: on each wire, the turn after n tool results makes the
// script's call n with its arguments, a request that offers no such tool
// gets text, and the script's end gets text.
func TestScript(t *testing.T) {
	t.Parallel()
	var before atomic.Int32
	s, err := Start(Config{Script: []Step{{Tool: "join_room", Args: map[string]any{"name": "r1"}}, {Tool: "ping", Before: func() { before.Add(1) }}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tests := []struct {
		name, path, body string
		want             []string // substrings of the answer
		not              string
	}{
		{"anthropic first call", "/v1/messages", `{"stream":true,"tools":[{"name":"mcp__letagents__join_room"}],"messages":[]}`,
			[]string{"event: message_start", `"name":"mcp__letagents__join_room"`, `"partial_json":"{\"name\":\"r1\"}"`, `"stop_reason":"tool_use"`}, ""},
		{"anthropic second call", "/v1/messages", `{"tools":[{"name":"mcp__letagents__ping"}],"messages":[{"content":[{"type":"tool_result"}]}]}`,
			[]string{`"name":"mcp__letagents__ping"`, `"id":"toolu_fake2"`}, "event:"},
		{"anthropic done", "/v1/messages", `{"tools":[{"name":"x_ping"}],"messages":[{"type":"tool_result"},{"type":"tool_result"}]}`,
			[]string{`"text":"done"`}, "tool_use\""},
		{"anthropic side question", "/v1/messages", `{"messages":[]}`, []string{`"text":"done"`}, "tool_use\""},
		{"responses, a namespace's tool", "/v1/responses", `{"tools":[{"type":"namespace","name":"mcp__letagents","tools":[{"name":"join_room"}]}]}`,
			[]string{"event: response.completed", `"namespace":"mcp__letagents"`, `"name":"join_room"`, `"arguments":"{\"name\":\"r1\"}"`}, ""},
		{"responses done", "/v1/responses", `{"tools":[{"name":"ping"}],"input":[{"type":"function_call_output"},{"type":"function_call_output"}]}`,
			[]string{`"output_text"`}, "function_call\""},
		{"gemini stream", "/v1beta/models/m:streamGenerateContent", `{"tools":[{"functionDeclarations":[{"name":"mcp_letagents_join_room"}]}]}`,
			[]string{"data: ", `"functionCall":{"args":{"name":"r1"},"name":"mcp_letagents_join_room"}`}, ""},
		{"gemini json side question", "/v1beta/models/m:generateContent", `{"generationConfig":{"responseMimeType":"application/json"}}`,
			[]string{"next_speaker"}, "functionCall"},
	}
	for _, tt := range tests {
		resp, err := http.Post(s.URL+tt.path, "application/json", strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, w := range tt.want {
			if !bytes.Contains(raw, []byte(w)) {
				t.Errorf("%s: answer lacks %s:\n%s", tt.name, w, raw)
			}
		}
		if tt.not != "" && bytes.Contains(raw, []byte(tt.not)) {
			t.Errorf("%s: answer has %s:\n%s", tt.name, tt.not, raw)
		}
	}
	if n := before.Load(); n != 1 {
		t.Errorf("the second step's Before ran %d times; want once", n)
	}
	if !s.Contains("mcp_letagents_join_room") || s.Contains("never sent") || len(s.Requests()) != len(tests) {
		t.Errorf("Contains does not tell what requests held")
	}
}
