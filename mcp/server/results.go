package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/letagents/letagents-go/mcp/apiclient"
)

// result is what a tool answers: one text item of indented JSON, which is
// what models read best and what the original client returned.
func result(v any) *mcp.CallToolResult {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		// Our own values always encode; say so plainly if one does not.
		return mcp.NewToolResultError(`{"success": false, "error": "could not encode the result"}`)
	}
	return mcp.NewToolResultText(buf.String())
}

// failure is a tool's error answer: {"success": false, "error", "hint"}
// marked as an error, so the model sees what went wrong and what to do.
type failure struct {
	Success bool   `json:"success"`
	Error   string `json:"error"`
	Hint    string `json:"hint,omitempty"`
	// Status and Code are the API's answer, when it gave one.
	Status int    `json:"status,omitempty"`
	Code   string `json:"code,omitempty"`
}

func fail(msg, hint string) *mcp.CallToolResult {
	return failed(failure{Error: msg, Hint: hint})
}

func failed(f failure) *mcp.CallToolResult {
	r := result(f)
	r.IsError = true
	return r
}

// apiFailure turns an error of an API call into a tool answer with the
// server's own message and a hint for the usual causes.
func (s *Server) apiFailure(ctx context.Context, err error) *mcp.CallToolResult {
	return failed(s.explain(ctx, err))
}

// explain is apiFailure's answer, for a caller that knows a better hint.
func (s *Server) explain(ctx context.Context, err error) failure {
	f := failure{Error: err.Error()}
	var apiErr *apiclient.APIError
	switch {
	case errors.As(err, &apiErr):
		f.Status, f.Code, f.Error = apiErr.Status, apiErr.Body.Code, apiErr.Body.Error
		if apiErr.Body.Message != "" {
			f.Error += ": " + apiErr.Body.Message
		}
		switch {
		case apiErr.Body.Code == "AGENT_SESSION_ENDED", apiErr.Body.Code == "AGENT_SESSION_INVALID":
			s.forgetSessions(ctx)
			f.Hint = "Your agent session is no longer valid and has been forgotten. Call register_agent_session again, then retry."
		case apiErr.Body.Code == "TOKEN_INVALID":
			s.forgetAuth(ctx)
			f.Hint = "The saved sign-in was refused and has been cleared. Call start_device_auth to sign in again."
		case apiErr.Status == http.StatusUnauthorized:
			f.Hint = "Sign in: call start_device_auth, have your human approve the code, then call poll_device_auth."
		case apiErr.Status == http.StatusForbidden:
			f.Hint = "The signed-in GitHub account cannot see this repository. Ask an owner for access, or clear_saved_auth and sign in with another account."
		case apiErr.Status == http.StatusTooManyRequests:
			f.Hint = "Too many requests: wait a minute and try again."
		case apiErr.Status >= 500:
			f.Hint = "The LetAgents server had a problem; try again shortly."
		}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		f.Hint = "The request did not finish in time; try again."
	default:
		f.Hint = "Is the LetAgents server reachable at " + s.cfg.APIURL + "? (LETAGENTS_API_URL)"
	}
	return f
}
