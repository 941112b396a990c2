package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

func toAgent(a letagents.Agent) wire.Agent {
	return wire.Agent{ID: letagents.WireID(letagents.AgentPrefix, a.ID), CanonicalKey: a.CanonicalKey, Name: a.Name,
		DisplayName: a.DisplayName, OwnerAccountID: letagents.WireID(letagents.AccountPrefix, a.OwnerAccountID),
		OwnerLogin: a.OwnerLogin, OwnerLabel: a.OwnerLabel,
		CreatedAt: letagents.FormatTime(a.CreatedAt), UpdatedAt: letagents.FormatTime(a.UpdatedAt)}
}

// registerAgent adds an agent to the caller's directory, or updates the
// labels of the one with that name. Its canonical key is
// "<login>/<name>", the login lower-cased as GitHub compares it.
func (s *server) registerAgent(w http.ResponseWriter, r *http.Request, _ call) error {
	who := identity(r)
	if err := requireAccount(who); err != nil {
		return err
	}
	var req wire.RegisterAgent
	if err := decode(w, r, &req); err != nil {
		return err
	}
	a, err := newAgent(who.Account, req)
	if err != nil {
		return err
	}
	agent, _, err := s.Store.UpsertAgent(r.Context(), a, time.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toAgent(agent))
	return nil
}

func newAgent(acct letagents.Account, req wire.RegisterAgent) (letagents.Agent, error) {
	if strings.TrimSpace(req.Name) == "" {
		return letagents.Agent{}, letagents.Errorf(letagents.Invalid, "name is required")
	}
	name, err := letagents.AgentName(req.Name)
	if err != nil {
		return letagents.Agent{}, err
	}
	display, err := letagents.Label("display_name", req.DisplayName, "")
	if err != nil {
		return letagents.Agent{}, err
	}
	if display == "" {
		// The name as typed, when it makes a label; else its slug.
		if display, err = letagents.Label("name", req.Name, name); err != nil {
			display = name
		}
	}
	if err := letagents.NotReserved("display_name", display); err != nil {
		return letagents.Agent{}, err
	}
	owner, err := letagents.Label("owner_label", req.OwnerLabel, acct.DisplayName)
	if err != nil {
		return letagents.Agent{}, err
	}
	login := strings.ToLower(acct.Login)
	return letagents.Agent{OwnerAccountID: acct.ID, Name: name, CanonicalKey: login + "/" + name,
		DisplayName: display, OwnerLogin: login, OwnerLabel: owner}, nil
}

func (s *server) myAgents(w http.ResponseWriter, r *http.Request, _ call) error {
	who := identity(r)
	if err := requireAccount(who); err != nil {
		return err
	}
	agents, err := s.Store.AgentsOf(r.Context(), who.Account.ID)
	if err != nil {
		return err
	}
	var j wire.MyAgents
	j.Account.ID = letagents.WireID(letagents.AccountPrefix, who.Account.ID)
	j.Account.Login = who.Account.Login
	j.Account.DisplayName = who.Account.DisplayName
	j.Agents = make([]wire.Agent, len(agents))
	for i, a := range agents {
		j.Agents[i] = toAgent(a)
	}
	writeJSON(w, http.StatusOK, j)
	return nil
}
