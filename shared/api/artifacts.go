package api

import (
	"net/http"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

func toArtifact(a letagents.Artifact) wire.Artifact {
	j := wire.Artifact{RoomID: a.RoomID, IdentityKey: a.IdentityKey, Provider: a.Provider, Kind: a.Kind,
		ArtifactID: optText(a.ID), Title: optText(a.Title), URL: optText(a.URL), Ref: optText(a.Ref), State: optText(a.State), Source: a.Source,
		FirstSeenAt: letagents.FormatTime(a.FirstSeenAt), UpdatedAt: letagents.FormatTime(a.UpdatedAt), LinkedTaskIDs: a.TaskIDs}
	if a.Number > 0 {
		j.ArtifactNumber = &a.Number
	}
	if j.LinkedTaskIDs == nil {
		j.LinkedTaskIDs = []string{}
	}
	return j
}

func (s *server) listArtifacts(w http.ResponseWriter, r *http.Request, c call) error {
	q := r.URL.Query()
	limit := queryLimit(q, letagents.DefaultArtifactPage, letagents.MaxArtifactPage)
	task := q.Get("task_id")
	if _, ok := letagents.ParseWireID(letagents.TaskPrefix, task); task != "" && !ok {
		return letagents.Errorf(letagents.Invalid, "task_id must be a task id like task_7")
	}
	list, err := s.Store.Artifacts(r.Context(), c.room, task, limit)
	if err != nil {
		return err
	}
	j := wire.Artifacts{RoomID: c.room, Artifacts: make([]wire.Artifact, len(list))}
	for i, a := range list {
		j.Artifacts[i] = toArtifact(a)
	}
	writeJSON(w, http.StatusOK, j)
	return nil
}

// publishArtifact records an artifact. Its source is stamped by the
// server: task_workflow_artifact when a worker session publishes it,
// manual otherwise (a manual republish never downgrades it). Publishing
// again what another account published takes a room admin
// (letagents.MayChange).
func (s *server) publishArtifact(w http.ResponseWriter, r *http.Request, c call) error {
	var req wire.PublishArtifact
	if err := decode(w, r, &req); err != nil {
		return err
	}
	f := req.ArtifactFields
	if req.Artifact != nil {
		f = *req.Artifact
	}
	a := letagents.Artifact{RoomID: c.room, Provider: f.Provider, Kind: f.Kind, ID: f.ID, Number: f.Number,
		Title: f.Title, URL: f.URL, Ref: f.Ref, State: f.State, Source: "manual", TaskIDs: req.LinkedTaskIDs}
	sess, err := s.agentSession(r, c.room, req.SessionCredentials, true)
	if err != nil {
		return err
	}
	if sess != nil {
		a.Source = "task_workflow_artifact"
	}
	if req.TaskID != "" {
		a.TaskIDs = append(a.TaskIDs, req.TaskID)
	}
	if a, err = letagents.NormalizeArtifact(a); err != nil {
		return err
	}
	who := identity(r)
	published, err := s.Store.PublishArtifact(r.Context(), a, who.Account.ID, false, time.Now())
	if letagents.IsNotOwner(err) && who.SignedIn() {
		// Another account's artifact: a room admin may publish it again.
		// The role is looked up only here, off the common path.
		_, role, roleErr := s.roleIn(r, c)
		if roleErr != nil {
			return roleErr
		}
		if role == letagents.RoleAdmin {
			published, err = s.Store.PublishArtifact(r.Context(), a, who.Account.ID, true, time.Now())
		}
	}
	if err != nil {
		return err
	}
	a = published
	writeJSON(w, http.StatusOK, wire.PublishedArtifact{RoomID: c.room, Artifact: toArtifact(a)})
	return nil
}
