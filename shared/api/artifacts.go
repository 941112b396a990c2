package api

import (
	"net/http"
	"strconv"
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

func (s *server) listArtifacts(w http.ResponseWriter, r *http.Request, ps params) {
	id, _, err := s.enter(r, ps, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	limit := letagents.DefaultArtifactPage
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > letagents.MaxArtifactPage {
			s.fail(w, r, letagents.Errorf(letagents.Invalid, "limit must be a whole number from 1 to %d", letagents.MaxArtifactPage))
			return
		}
	}
	task := q.Get("task_id")
	if _, ok := letagents.ParseWireID(letagents.TaskPrefix, task); task != "" && !ok {
		s.fail(w, r, letagents.Errorf(letagents.Invalid, "task_id must be a task id like task_7"))
		return
	}
	list, err := s.Store.Artifacts(r.Context(), id, task, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	j := wire.Artifacts{RoomID: id, Artifacts: make([]wire.Artifact, len(list))}
	for i, a := range list {
		j.Artifacts[i] = toArtifact(a)
	}
	writeJSON(w, http.StatusOK, j)
}

// publishArtifact records an artifact. Its source is stamped by the
// server: task_workflow_artifact when a worker session publishes it,
// manual otherwise (a manual republish never downgrades it).
func (s *server) publishArtifact(w http.ResponseWriter, r *http.Request, ps params) {
	var req wire.PublishArtifact
	id, _, err := s.enterWith(w, r, ps, &req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f := req.ArtifactFields
	if req.Artifact != nil {
		f = *req.Artifact
	}
	a := letagents.Artifact{RoomID: id, Provider: f.Provider, Kind: f.Kind, ID: f.ID, Number: f.Number,
		Title: f.Title, URL: f.URL, Ref: f.Ref, State: f.State, Source: "manual", TaskIDs: req.LinkedTaskIDs}
	sess, err := s.agentSession(r, id, req.SessionCredentials, true)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if sess != nil {
		a.Source = "task_workflow_artifact"
	}
	if req.TaskID != "" {
		a.TaskIDs = append(a.TaskIDs, req.TaskID)
	}
	if a, err = letagents.NormalizeArtifact(a); err != nil {
		s.fail(w, r, err)
		return
	}
	a, err = s.Store.PublishArtifact(r.Context(), a, time.Now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.PublishedArtifact{RoomID: id, Artifact: toArtifact(a)})
}
