package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// agentJSON is an agent identity on the wire.
type agentJSON struct {
	ID             string `json:"id"`
	CanonicalKey   string `json:"canonical_key"`
	Name           string `json:"name"`
	DisplayName    string `json:"display_name"`
	OwnerAccountID string `json:"owner_account_id"`
	OwnerLogin     string `json:"owner_login"`
	OwnerLabel     string `json:"owner_label"`
	CreatedAt      string `json:"created_at"`
	UpdatedAt      string `json:"updated_at"`
}

func toAgent(a letagents.Agent) agentJSON {
	return agentJSON{ID: letagents.WireID(letagents.AgentPrefix, a.ID), CanonicalKey: a.CanonicalKey, Name: a.Name,
		DisplayName: a.DisplayName, OwnerAccountID: letagents.WireID(letagents.AccountPrefix, a.OwnerAccountID),
		OwnerLogin: a.OwnerLogin, OwnerLabel: a.OwnerLabel,
		CreatedAt: letagents.FormatTime(a.CreatedAt), UpdatedAt: letagents.FormatTime(a.UpdatedAt)}
}

type registerAgentRequest struct {
	Name        string `json:"name"`
	DisplayName string `json:"display_name"`
	OwnerLabel  string `json:"owner_label"`
}

// registerAgent adds an agent to the caller's directory, or updates the
// labels of the one with that name. Its canonical key is
// "<login>/<name>", the login lower-cased as GitHub compares it.
func (s *server) registerAgent(w http.ResponseWriter, r *http.Request, _ params) {
	who := identity(r)
	if err := requireAccount(who); err != nil {
		s.fail(w, r, err)
		return
	}
	var req registerAgentRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	a, err := newAgent(who.Account, req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	agent, _, err := s.Store.UpsertAgent(r.Context(), a, time.Now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, toAgent(agent))
}

func newAgent(acct letagents.Account, req registerAgentRequest) (letagents.Agent, error) {
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
	owner, err := letagents.Label("owner_label", req.OwnerLabel, acct.DisplayName)
	if err != nil {
		return letagents.Agent{}, err
	}
	login := strings.ToLower(acct.Login)
	return letagents.Agent{OwnerAccountID: acct.ID, Name: name, CanonicalKey: login + "/" + name,
		DisplayName: display, OwnerLogin: login, OwnerLabel: owner}, nil
}

type myAgentsJSON struct {
	Account struct {
		ID          string `json:"id"`
		Login       string `json:"login"`
		DisplayName string `json:"display_name"`
	} `json:"account"`
	Agents []agentJSON `json:"agents"`
}

func (s *server) myAgents(w http.ResponseWriter, r *http.Request, _ params) {
	who := identity(r)
	if err := requireAccount(who); err != nil {
		s.fail(w, r, err)
		return
	}
	agents, err := s.Store.AgentsOf(r.Context(), who.Account.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var j myAgentsJSON
	j.Account.ID = letagents.WireID(letagents.AccountPrefix, who.Account.ID)
	j.Account.Login = who.Account.Login
	j.Account.DisplayName = who.Account.DisplayName
	j.Agents = make([]agentJSON, len(agents))
	for i, a := range agents {
		j.Agents[i] = toAgent(a)
	}
	writeJSON(w, http.StatusOK, j)
}
