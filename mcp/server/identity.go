package server

import (
	"context"
	"time"

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
	in := identity.Inputs{Getenv: s.cfg.Getenv, InstanceUUID: s.instance, OSUser: osUser(),
		GitUserName: s.git(ctx, "config", "user.name"), GitUserEmail: s.git(ctx, "config", "user.email")}
	if st.Auth != nil && st.Auth.Account != nil {
		in.AccountLogin, in.AccountDisplayName = st.Auth.Account.Login, st.Auth.Account.DisplayName
	}
	signedIn := s.token() != ""
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
		a, err := s.api.RegisterAgent(ctx, wire.RegisterAgent{Name: id.Name, DisplayName: id.DisplayName, OwnerLabel: id.OwnerLabel})
		if err != nil {
			s.log.Warn("could not register the agent", "name", id.Name, "error", err)
		} else {
			id.CanonicalKey, id.DisplayName, id.OwnerLabel = a.CanonicalKey, a.DisplayName, a.OwnerLabel
			id.ActorLabel = actors.ActorLabel(id.DisplayName, id.OwnerLabel, id.IDELabel)
		}
	}
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
	return id
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
