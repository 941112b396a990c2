package codex

import (
	"encoding/json"
	"errors"
	"strings"
)

// FailKind is what kind of failure a start met: each has its own remedy.
type FailKind int

// Kinds of failure.
const (
	// FailServer: the app-server could not be reached, or went away.
	FailServer FailKind = iota
	// FailMissing: there is no codex binary to run.
	FailMissing
	// FailLogin: the model provider refused Codex's credentials.
	FailLogin
	// FailModel: the model API answered an error.
	FailModel
	// FailRegistration: the worker ran but did not register in the room.
	FailRegistration
)

// StartError is why a live session did not start.
type StartError struct {
	Kind   FailKind
	Reason string
	Err    error // what caused it, if anything
}

func (e *StartError) Error() string { return "codex worker did not start: " + e.Reason }

func (e *StartError) Unwrap() error { return e.Err }

// Hint is what to do about err, a failure of Start: advice that matches
// its kind.
func Hint(err error) string {
	var se *StartError
	kind := FailServer
	if errors.As(err, &se) {
		kind = se.Kind
	}
	switch kind {
	case FailMissing:
		return "Install the codex CLI (npm install -g @openai/codex) or set LETAGENTS_CODEX_BIN to it, or point LETAGENTS_CODEX_SERVER_URL at a running codex app-server."
	case FailLogin:
		return "Codex is not signed in to its model provider: run `codex login` (or set the provider's API key), then start again."
	case FailModel:
		return "The model API failed the worker's turn (see the error): check Codex's model provider and start again."
	case FailRegistration:
		return "The worker's LetAgents MCP server must reach the API as you: Codex passes MCP servers only a few environment variables, " +
			"so put LETAGENTS_TOKEN and LETAGENTS_API_URL in [mcp_servers.letagents] env = { … } of ~/.codex/config.toml (letagents doctor checks it)."
	}
	return "Check that the codex app-server runs (LETAGENTS_CODEX_SERVER_URL, or LETAGENTS_CODEX_BIN for one started here) and start again."
}

// failureKind is the kind of a failed turn's error: a refused login, else
// a model error.
func failureKind(e *turnError) FailKind {
	if e == nil {
		return FailModel
	}
	var name string
	if json.Unmarshal(e.Info, &name) != nil {
		var o map[string]json.RawMessage
		if json.Unmarshal(e.Info, &o) == nil {
			for k := range o {
				name = k
			}
		}
	}
	msg := strings.ToLower(e.Message)
	if name == "unauthorized" || strings.Contains(msg, "401 unauthorized") || strings.Contains(msg, "codex login") {
		return FailLogin
	}
	return FailModel
}
