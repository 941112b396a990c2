package api

import (
	"net/http"
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
// labels of the one with that name. Its name is kept as given and its
// canonical key is "<login>/<name>", the login as GitHub spells it, as the
// original derives it.
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
	name, err := letagents.RegisteredAgentName(req.Name)
	if err != nil {
		return letagents.Agent{}, err
	}
	display, err := letagents.Label("display_name", req.DisplayName, "")
	if err != nil {
		return letagents.Agent{}, err
	}
	if display == "" {
		// A name is a label already: no control characters, and shorter.
		display, _ = letagents.Label("name", name, name)
	}
	if err := letagents.NotReserved("display_name", display); err != nil {
		return letagents.Agent{}, err
	}
	owner, err := letagents.OwnerLabel(req.OwnerLabel, acct)
	if err != nil {
		return letagents.Agent{}, err
	}
	return letagents.Agent{OwnerAccountID: acct.ID, Name: name, CanonicalKey: acct.Login + "/" + name,
		DisplayName: display, OwnerLogin: acct.Login, OwnerLabel: owner}, nil
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
