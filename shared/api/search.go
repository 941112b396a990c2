package api

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

// searchRoom is GET /rooms/{room}/search: the room's messages that match
// ?q, a page of them, best first.
func (s *server) searchRoom(w http.ResponseWriter, r *http.Request, c call) error {
	q, err := searchQuery(r.URL.Query(), true)
	if err != nil {
		return err
	}
	page, err := s.Store.Search(r.Context(), []string{c.room}, q)
	if err != nil {
		return err
	}
	return writeSearch(w, wire.SearchResults{RoomID: c.room, Query: q.Text}, page)
}

// searchRooms is GET /search: the messages that match ?q in every room
// the signed-in account is known in (the rooms GET /projects lists), each
// room let in by the access gate exactly as a read of it would be. A room
// whose access GitHub cannot confirm right now is left out and named in
// unchecked_rooms, never searched on trust.
func (s *server) searchRooms(w http.ResponseWriter, r *http.Request, _ call) error {
	who := identity(r)
	if err := requireAccount(who); err != nil {
		return err
	}
	q, err := searchQuery(r.URL.Query(), false)
	if err != nil {
		return err
	}
	mine, err := s.Store.RoomsOf(r.Context(), who.Account.ID)
	if err != nil {
		return err
	}
	j := wire.SearchResults{Query: q.Text}
	allowed, unchecked, err := s.Auth.Readable(r.Context(), who, mine)
	if err != nil {
		return err
	}
	readable := make([]string, len(allowed))
	for i, room := range allowed {
		readable[i] = room.ID
	}
	for _, room := range unchecked {
		j.UncheckedRooms = append(j.UncheckedRooms, room.ID)
	}
	page, err := s.Store.Search(r.Context(), readable, q)
	if err != nil {
		return err
	}
	return writeSearch(w, j, page)
}

// searchQuery reads a search's query parameters: q, sender, source,
// thread (on a room's route only), since, until (RFC 3339), limit (as
// reads take it) and cursor.
func searchQuery(v url.Values, inRoom bool) (letagents.SearchQuery, error) {
	q := letagents.SearchQuery{Text: v.Get("q"), Sender: v.Get("sender"), Source: v.Get("source"),
		Limit: queryLimit(v, letagents.DefaultSearchPage, letagents.MaxSearchPage)}
	if t := v.Get("thread"); t != "" {
		if !inRoom {
			return q, letagents.SearchError(letagents.CodeSearchFilterInvalid, "thread needs a room: search GET /rooms/{room}/search")
		}
		n, err := letagents.ParseMessageID(t)
		if err != nil || n == 0 {
			return q, letagents.SearchError(letagents.CodeSearchFilterInvalid, "thread must be a message id like msg_42")
		}
		q.ThreadSeq = n
	}
	for _, f := range []struct {
		name string
		t    *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		s := v.Get(f.name)
		if s == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
		if err != nil {
			return q, letagents.SearchError(letagents.CodeSearchFilterInvalid, "%s must be a time like 2026-01-02T15:04:05Z", f.name)
		}
		*f.t = t
	}
	if c := v.Get("cursor"); c != "" {
		after, err := letagents.ParseSearchCursor(c)
		if err != nil {
			return q, err
		}
		q.After = &after
	}
	return q, q.Validate()
}

// writeSearch answers a page of hits within letagents.MaxPageBytes; a
// page cut short continues, by its cursor, after its last hit.
func writeSearch(w http.ResponseWriter, j wire.SearchResults, page letagents.SearchPage) error {
	hits := make([]wire.SearchHit, len(page.Hits))
	for i, h := range page.Hits {
		parts := make([]wire.SnippetPart, len(h.Snippet))
		for k, p := range h.Snippet {
			parts[k] = wire.SnippetPart{Text: p.Text, Match: p.Match}
		}
		hits[i] = wire.SearchHit{Message: toMessage(h.Message), Rank: h.Rank, Snippet: parts}
	}
	items, cut, err := withinPage(hits)
	if err != nil {
		return err
	}
	defer items.release()
	j.Results, j.HasMore = nil, page.HasMore || cut
	if j.HasMore {
		next := page.Hits[items.len()-1].Cursor().String()
		j.NextCursor = &next
	}
	writeJSONList(w, http.StatusOK, j, "results", items)
	return nil
}
