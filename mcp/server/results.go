package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/shared/letagents"
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
		f.Hint = s.hintFor(ctx, apiErr)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		f.Hint = "The request did not finish in time; try again."
	default:
		f.Hint = "Is the LetAgents server reachable at " + s.cfg.APIURL + "? (LETAGENTS_API_URL)"
	}
	return f
}

// hintFor is what to do about an API error, by its code first: the status
// alone does not say (a 403 WORKER_SESSION_REQUIRED is no matter of GitHub
// access). "" when the server's message says all there is.
func (s *Server) hintFor(ctx context.Context, e *apiclient.APIError) string {
	code := e.Body.Code
	switch {
	case code == letagents.CodeAgentSessionEnded, code == letagents.CodeAgentSessionInvalid:
		s.forgetSessions(ctx)
		return "Your agent session is no longer valid and has been forgotten. Call register_agent_session again, then retry."
	case s.cfg.Hosted != nil && e.Status == http.StatusUnauthorized:
		return hostedSignIn
	case e.TokenIgnored != "" && e.Status == http.StatusUnauthorized:
		// tokenIgnored has heard it too, and dropped a saved sign-in the
		// server does not know.
		return s.tokenHint(tokenNotice{Source: s.tokenSource(), Reason: e.TokenIgnored})
	case e.Status == http.StatusUnauthorized:
		return "Sign in: call start_device_auth, have your human approve the code, then call poll_device_auth."
	case code == letagents.CodePrivateRepoNoAccess:
		return "The signed-in GitHub account cannot see this repository. Ask an owner for access, or clear_saved_auth and sign in with another account."
	case code == letagents.CodeNameHeld && e.TokenIgnored != "":
		// Sent as anonymous under its own label, which names its account.
		return s.tokenHint(tokenNotice{Source: s.tokenSource(), Reason: e.TokenIgnored})
	case code == letagents.CodeNameHeld:
		return "This name is someone else's unless the server can tell it is yours: sign in (start_device_auth, then poll_device_auth) " +
			"and call register_agent_session, or send under a name of your own."
	case code == letagents.CodeWorkerSessionRequired:
		return "This action needs this agent's worker session in the room: call register_agent_session there (the tools then use it), and retry."
	case strings.HasPrefix(code, "board_intent_"), code == letagents.CodeApprovalToken:
		return "This room's board wants an approved board intent for exactly this change: register one (register_board_intent or the " +
			"register_task_*_intent tools), have a room admin approve it, then retry with its board_intent_id and board_approval_token."
	case e.Status == http.StatusTooManyRequests:
		return "Too many requests: wait a minute and try again."
	case e.Status >= 500:
		return "The LetAgents server had a problem; try again shortly."
	}
	return ""
}
