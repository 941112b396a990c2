package api

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
)

// messageJSON is a message on the wire.
type messageJSON struct {
	ID             string  `json:"id"`
	RoomID         string  `json:"room_id"`
	Sender         string  `json:"sender"`
	Text           string  `json:"text"`
	Source         *string `json:"source"`
	Timestamp      string  `json:"timestamp"`
	ThreadParentID *string `json:"thread_parent_id"`
}

func toMessage(m letagents.Message) messageJSON {
	j := messageJSON{ID: letagents.MessageID(m.Seq), RoomID: m.RoomID, Sender: m.Sender, Text: m.Text,
		Timestamp: letagents.FormatTime(m.CreatedAt)}
	if m.Source != "" {
		src := m.Source
		j.Source = &src
	}
	if m.ThreadParentSeq > 0 {
		id := letagents.MessageID(m.ThreadParentSeq)
		j.ThreadParentID = &id
	}
	return j
}

// pageJSON is a list of messages. The room's id goes under project_id on
// the legacy routes and under room_id on the current ones, as each kind of
// client expects; the other key is left out.
type pageJSON struct {
	RoomID    string        `json:"room_id,omitempty"`
	ProjectID string        `json:"project_id,omitempty"`
	Messages  []messageJSON `json:"messages"`
	HasMore   bool          `json:"has_more"`
	HasOlder  *bool         `json:"has_older,omitempty"`
}

func toPage(r *http.Request, roomID string, p letagents.MessagePage, backward bool) pageJSON {
	j := pageJSON{Messages: make([]messageJSON, len(p.Messages)), HasMore: p.HasMore}
	if strings.HasPrefix(r.URL.Path, "/projects/") {
		j.ProjectID = roomID
	} else {
		j.RoomID = roomID
	}
	for i, m := range p.Messages {
		j.Messages[i] = toMessage(m)
	}
	if backward {
		j.HasOlder = &p.HasOlder
	}
	return j
}

type sendRequest struct {
	Sender         string  `json:"sender"`
	Text           string  `json:"text"`
	ThreadParentID *string `json:"thread_parent_id"`
}

func (s *server) sendMessage(w http.ResponseWriter, r *http.Request, ps params) {
	id, err := roomParam(ps)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req sendRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	m := letagents.NewMessage{RoomID: id, Sender: req.Sender, Text: req.Text}
	if req.ThreadParentID != nil && *req.ThreadParentID != "" {
		if m.ThreadParentSeq, err = letagents.ParseMessageID(*req.ThreadParentID); err != nil || m.ThreadParentSeq == 0 {
			s.fail(w, r, letagents.Errorf(letagents.Invalid, "thread_parent_id must be a message id like msg_42"))
			return
		}
	}
	msg, err := s.Store.SendMessage(r.Context(), m)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, toMessage(msg))
}

func (s *server) readMessages(w http.ResponseWriter, r *http.Request, ps params) {
	id, err := roomParam(ps)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q, err := pageQuery(r.URL.Query(), true)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, err := s.Store.Messages(r.Context(), id, q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toPage(r, id, page, q.Before > 0))
}

// pageQuery reads ?after, ?before (when allowed) and ?limit.
func pageQuery(v url.Values, allowBefore bool) (store.MessageQuery, error) {
	q := store.MessageQuery{Limit: letagents.DefaultPageSize}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > letagents.MaxPageSize {
			return q, letagents.Errorf(letagents.Invalid, "limit must be a whole number from 1 to %d", letagents.MaxPageSize)
		}
		q.Limit = n
	}
	if s := v.Get("after"); s != "" {
		n, err := letagents.ParseMessageID(s)
		if err != nil {
			return q, letagents.Errorf(letagents.Invalid, "after: %v", err)
		}
		q.After = n
	}
	if s := v.Get("before"); s != "" && allowBefore {
		if v.Get("after") != "" {
			return q, letagents.Errorf(letagents.Invalid, "give after or before, not both")
		}
		q.Before = store.BeforeLatest
		if s != "latest" {
			n, err := letagents.ParseMessageID(s)
			if err != nil || n == 0 {
				return q, letagents.Errorf(letagents.Invalid, "before must be latest or a message id like msg_42")
			}
			q.Before = n
		}
	}
	return q, nil
}
