package server

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/mcp/identity"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/actors"
	"github.com/letagents/letagents-go/shared/wire"
)

// agentIdentityJSON is who this agent is, as tool answers show it.
type agentIdentityJSON struct {
	Name            string `json:"name"`
	DisplayName     string `json:"display_name"`
	OwnerLabel      string `json:"owner_label"`
	IDELabel        string `json:"ide_label"`
	ActorLabel      string `json:"actor_label"`
	CanonicalKey    string `json:"canonical_key,omitempty"`
	RuntimeKey      string `json:"runtime_key"`
	AgentInstanceID string `json:"agent_instance_id"`
}

func (s *Server) identityJSON(id identity.Identity) agentIdentityJSON {
	return agentIdentityJSON{Name: id.Name, DisplayName: id.DisplayName, OwnerLabel: id.OwnerLabel, IDELabel: id.IDELabel,
		ActorLabel: id.ActorLabel, CanonicalKey: id.CanonicalKey, RuntimeKey: id.RuntimeKey, AgentInstanceID: s.instance}
}

// whoAmI is this agent's identity, worked out once (and again after a
// sign-in, by forgetIdentity).
func (s *Server) whoAmI(ctx context.Context) identity.Identity {
	s.mu.Lock()
	id := s.identity
	s.mu.Unlock()
	if id.ActorLabel != "" {
		return id
	}
	id = s.resolveIdentity(ctx)
	s.mu.Lock()
	s.identity = id
	s.mu.Unlock()
	return id
}

// localOwner asks the server whether it acts for the local owner (sign-in
// off, every room open: the local runner), whose agents need no sign-in.
// A server that does not answer is taken not to.
func (s *Server) localOwner(ctx context.Context) bool {
	sess, err := s.api.Session(ctx)
	return err == nil && sess.LocalOwner
}

func (s *Server) forgetIdentity() {
	s.mu.Lock()
	s.identity = identity.Identity{}
	s.mu.Unlock()
}

// resolveIdentity works out the identity from the environment, the saved
// state and, when signed in, the agents directory, where it registers the
// agent so its canonical key (owner login/name) is the server's.
func (s *Server) resolveIdentity(ctx context.Context) identity.Identity {
	st := s.load()
	in := identity.Inputs{Getenv: s.cfg.Getenv, InstanceUUID: s.instance, ClientProcess: s.cfg.ClientProcess, OSUser: s.osUser(),
		GitUserName: s.git(ctx, "config", "user.name"), GitUserEmail: s.git(ctx, "config", "user.email")}
	if st.Auth != nil && st.Auth.Account != nil {
		in.AccountLogin, in.AccountDisplayName = st.Auth.Account.Login, st.Auth.Account.DisplayName
	}
	signedIn := s.token() != "" || s.localOwner(ctx)
	if signedIn {
		if me, err := s.api.MyAgents(ctx); err == nil {
			in.AccountLogin, in.AccountDisplayName = me.Account.Login, me.Account.DisplayName
			for _, a := range me.Agents {
				in.TakenNames = append(in.TakenNames, a.Name)
			}
		} else {
			s.log.Warn("could not read the agents directory", "error", err)
		}
	}
	// The runtime key does not depend on what is stored: resolve once to
	// learn it, then again with the identity saved under it.
	key := identity.Resolve(in).RuntimeKey
	if saved, ok := st.AgentIdentities[key]; ok {
		stored := identity.Identity{RuntimeKey: key, Name: saved.Name, DisplayName: saved.DisplayName}
		in.Stored = &stored
		// Our own earlier registration is not a name taken by another agent.
		in.TakenNames = without(in.TakenNames, saved.Name)
	}
	id := identity.Resolve(in)
	if signedIn {
		if registered, err := s.register(ctx, id); err != nil {
			s.log.Warn("could not register the agent", "name", id.Name, "error", err)
		} else {
			id = registered
		}
	}
	s.save(ctx, id)
	return id
}

// register records the agent in its owner's agents directory and takes
// the server's word for its key and labels.
func (s *Server) register(ctx context.Context, id identity.Identity) (identity.Identity, error) {
	a, err := s.api.RegisterAgent(ctx, wire.RegisterAgent{Name: id.Name, DisplayName: id.DisplayName, OwnerLabel: id.OwnerLabel})
	if err != nil {
		return id, err
	}
	id.CanonicalKey, id.DisplayName, id.OwnerLabel = a.CanonicalKey, a.DisplayName, a.OwnerLabel
	id.ActorLabel = actors.ActorLabel(id.DisplayName, id.OwnerLabel, id.IDELabel)
	return id, nil
}

// save keeps the identity under its runtime key, for this agent's next
// start.
func (s *Server) save(ctx context.Context, id identity.Identity) {
	source := "local"
	if id.CanonicalKey != "" {
		source = "api"
	}
	s.update(ctx, func(st *state.State) error {
		st.AgentIdentities[id.RuntimeKey] = state.Identity{Name: id.Name, DisplayName: id.DisplayName, OwnerLabel: id.OwnerLabel,
			IDELabel: id.IDELabel, ActorLabel: id.ActorLabel, CanonicalKey: id.CanonicalKey, RuntimeKey: id.RuntimeKey,
			Source: source, ResolvedAt: time.Now().UTC().Format(time.RFC3339)}
		return nil
	})
}

// identityTools are the tools about who this agent is.
func (s *Server) identityTools() []mcpserver.ServerTool {
	return []mcpserver.ServerTool{
		bind(tool("set_agent_name", writes,
			"Choose the name you are known by in rooms, instead of your generated codename (needs sign-in: the name is registered in your "+
				"owner's agents directory). A session you already registered keeps its label: register a new one to use the name there.",
			mcp.WithString("name", mcp.Required(), mcp.MinLength(minAgentName), mcp.MaxLength(maxAgentName),
				mcp.Description(fmt.Sprintf("The name (%d to %d characters).", minAgentName, maxAgentName))),
			mcp.WithString("conversation_id", mcp.MaxLength(maxIgnored),
				mcp.Description("Use the name only for this conversation (what get_current_room reports for it), without registering it."))),
			s.setAgentName),
	}
}

// Bounds of a name set_agent_name takes, the original's, in characters.
const (
	minAgentName = 2
	maxAgentName = 64
)

// maxConversations bounds the conversation-scoped names kept, as the
// original did: past it the oldest is forgotten.
const maxConversations = 20

type setNameArgs struct {
	Name           string `json:"name"`
	ConversationID string `json:"conversation_id"`
}

// setAgentName renames this agent: registered under the new name, which
// later starts keep; or, for one conversation, only remembered for it.
func (s *Server) setAgentName(ctx context.Context, a setNameArgs) *mcp.CallToolResult {
	name := strings.TrimSpace(a.Name)
	if n := utf8.RuneCountInString(name); n < minAgentName || n > maxAgentName {
		return fail(fmt.Sprintf("Name must be between %d and %d characters.", minAgentName, maxAgentName), "")
	}
	if s.token() == "" {
		return fail("Authentication required. Run start_device_auth first.",
			"Sign in: call start_device_auth, have your human approve the code, call poll_device_auth, then set the name again.")
	}
	id, err := identity.Renamed(s.whoAmI(ctx), name)
	if err != nil {
		return fail(err.Error(), "Use a name with letters or digits.")
	}
	if a.ConversationID != "" {
		s.setConversationIdentity(a.ConversationID, id)
	} else {
		if id, err = s.register(ctx, id); err != nil {
			return s.apiFailure(ctx, err)
		}
		s.mu.Lock()
		s.identity = id
		s.mu.Unlock()
		s.save(ctx, id)
	}
	return result(map[string]any{"success": true, "message": fmt.Sprintf("Agent name changed to %q.", id.DisplayName),
		"agent_identity": s.identityJSON(id)})
}

// setConversationIdentity remembers a name for one conversation.
func (s *Server) setConversationIdentity(conversation string, id identity.Identity) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conversations[conversation]; !ok {
		if len(s.conversationOrder) == maxConversations {
			delete(s.conversations, s.conversationOrder[0])
			s.conversationOrder = s.conversationOrder[1:]
		}
		s.conversationOrder = append(s.conversationOrder, conversation)
	}
	s.conversations[conversation] = id
}

// identityIn is who this agent is in a conversation: the name set for
// it, else the agent's own.
func (s *Server) identityIn(ctx context.Context, conversation string) identity.Identity {
	s.mu.Lock()
	id, ok := s.conversations[conversation]
	s.mu.Unlock()
	if ok {
		return id
	}
	return s.whoAmI(ctx)
}

func without(list []string, drop string) []string {
	out := list[:0:0]
	for _, v := range list {
		if v != drop {
			out = append(out, v)
		}
	}
	return out
}
