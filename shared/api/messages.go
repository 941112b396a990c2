package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
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

// maxPageJSON bounds the encoded messages of one page, well under the 6 MB
// Lambda allows a response: 500 messages of 32 KiB would be 16 MB. A page
// that would pass it is cut at a message boundary (never below one
// message) and says so with has_more, or has_older when read backward.
const maxPageJSON = 4 << 20

// pageJSON is a list of messages. The room's id goes under project_id on
// the legacy routes and under room_id on the current ones, as each kind of
// client expects; the other key is left out.
type pageJSON struct {
	RoomID    string            `json:"room_id,omitempty"`
	ProjectID string            `json:"project_id,omitempty"`
	Messages  []json.RawMessage `json:"messages"`
	HasMore   bool              `json:"has_more"`
	HasOlder  *bool             `json:"has_older,omitempty"`
}

func toPage(r *http.Request, roomID string, p letagents.MessagePage, backward bool) (pageJSON, error) {
	j := pageJSON{Messages: make([]json.RawMessage, 0, len(p.Messages)), HasMore: p.HasMore}
	if strings.HasPrefix(r.URL.Path, "/projects/") {
		j.ProjectID = roomID
	} else {
		j.RoomID = roomID
	}
	msgs := p.Messages
	if backward {
		// Keep the newest when cutting a page read backward.
		msgs = slices.Clone(msgs)
		slices.Reverse(msgs)
	}
	size := 0
	for _, m := range msgs {
		b, err := json.Marshal(toMessage(m))
		if err != nil {
			return j, fmt.Errorf("encode message: %w", err)
		}
		if size += len(b) + 1; size > maxPageJSON && len(j.Messages) > 0 {
			if backward {
				p.HasOlder = true
			} else {
				j.HasMore = true
			}
			break
		}
		j.Messages = append(j.Messages, b)
	}
	if backward {
		slices.Reverse(j.Messages)
		j.HasOlder = &p.HasOlder
	}
	return j, nil
}

type sendRequest struct {
	Sender         string  `json:"sender"`
	Text           string  `json:"text"`
	ThreadParentID *string `json:"thread_parent_id"`
}

func (s *server) sendMessage(w http.ResponseWriter, r *http.Request, ps params) {
	id, _, err := s.enter(r, ps, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req sendRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	m := letagents.NewMessage{RoomID: id, Sender: req.Sender, Text: req.Text, Source: identity(r).Source()}
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
	id, _, err := s.enter(r, ps, false)
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
	s.writePage(w, r, id, page, q.Before > 0)
}

func (s *server) writePage(w http.ResponseWriter, r *http.Request, id string, page letagents.MessagePage, backward bool) {
	j, err := toPage(r, id, page, backward)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, j)
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
