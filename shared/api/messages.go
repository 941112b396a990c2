package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/letagents/letagents-go/shared/actors"
	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/wire"
)

func toMessage(m letagents.Message) wire.Message {
	j := wire.Message{ID: letagents.MessageID(m.Seq), RoomID: m.RoomID, Sender: m.Sender, Text: m.Text,
		Source: optText(m.Source), Timestamp: letagents.FormatTime(m.CreatedAt), ThreadRootID: letagents.MessageID(m.Seq)}
	if m.ThreadParentSeq > 0 {
		id := letagents.MessageID(m.ThreadParentSeq)
		j.ThreadParentID = &id
		j.ThreadRootID = letagents.MessageID(m.ThreadRootSeq)
	}
	if q := m.ReplyTo; q != nil {
		j.ReplyTo = &wire.Quote{ID: letagents.MessageID(q.Seq), Sender: q.Sender, Text: q.Text, Truncated: q.Truncated,
			Source: optText(q.Source), Timestamp: letagents.FormatTime(q.CreatedAt)}
	}
	if t := m.Thread; t != nil {
		j.Thread = &wire.Thread{RootMessageID: j.ID, ReplyCount: t.ReplyCount,
			LatestReplyID: letagents.MessageID(t.LatestReplySeq), LatestReplyAt: letagents.FormatTime(t.LatestReplyAt)}
	}
	return j
}

// maxPageJSON bounds the encoded messages of one page, well under the 6 MB
// Lambda allows a response: 500 messages of 32 KiB would be 16 MB. A page
// that would pass it is cut at a message boundary (never below one
// message) and says so with has_more, or has_older when read backward.
const maxPageJSON = 4 << 20

// toPage lists messages. The room's id goes under project_id on the legacy
// routes and under room_id on the current ones, as each kind of client
// expects; the other key is left out.
func toPage(r *http.Request, roomID string, p letagents.MessagePage, backward bool) (wire.Page, error) {
	j := wire.Page{Messages: make([]json.RawMessage, 0, len(p.Messages)), HasMore: p.HasMore}
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

func (s *server) sendMessage(w http.ResponseWriter, r *http.Request, c call) error {
	var req wire.SendMessage
	if err := decode(w, r, &req); err != nil {
		return err
	}
	m := letagents.NewMessage{RoomID: c.room, Sender: req.Sender, Text: req.Text, ClientMessageID: req.ClientMessageID}
	var err error
	if m.ThreadParentSeq, err = replyTarget(req); err != nil {
		return err
	}
	// A worker session's message is signed by the server, never the body.
	sess, err := s.agentSession(r, c.room, req.SessionCredentials, true)
	if err != nil {
		return err
	}
	if sess != nil {
		m.Sender, m.Source, m.PublisherSessionID = sess.ActorLabel, letagents.SourceAgent, sess.ID
	} else if m.Source, err = s.senderSource(r, m); err != nil {
		return err
	}
	msg, created, err := s.Store.SendMessage(r.Context(), m)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if !created {
		status = http.StatusOK // a repeat of a send that went through
	}
	writeJSON(w, status, toMessage(msg))
	return nil
}

// senderSource is the source of a message sent with no worker session to
// vouch for its sender, or why it may not be sent.
//
// An agent session's label names that agent in the room, so nobody but its
// account may send under it. An owner token is an agent's credential, but
// its messages read as an agent's (source "agent") only under a label the
// account owns: one of its sessions' in the room, or one made of one of
// its agents' display and owner labels. Any other actor label that names
// an owner ("<name> | <owner>'s agent | <ide>") is refused, as a claim to
// be someone else's agent; a plain name is stored with no source, as
// unverified. Labels compare in actors.CanonicalLabel form, ignoring case.
func (s *server) senderSource(r *http.Request, m letagents.NewMessage) (string, error) {
	// Bad input, such as the server's own name, is refused as such before
	// anyone's claims are read.
	if err := m.Validate(); err != nil {
		return "", err
	}
	who, sender := identity(r), m.Sender
	label := actors.CanonicalLabel(sender)
	display, owner, _ := actors.ParseActorLabel(label)
	c, err := s.Store.SenderClaim(r.Context(), m.RoomID, label, display, owner, who.Account.ID)
	switch {
	case err != nil:
		return "", err
	case c.Others && !c.Session:
		return "", letagents.Errorf(letagents.Forbidden,
			"sender %q is the actor label of another account's agent in this room; send under a name of your own", sender)
	case who.Via != auth.ViaOwnerToken, c.Session || c.Agent:
		return who.Source(), nil
	case owner != "":
		return "", letagents.Errorf(letagents.Forbidden,
			"sender %q names an agent this account does not own; send as your own agent's actor label, or pass its agent_session_id and agent_session_token", sender)
	}
	return "", nil
}

// replyTarget reads the message a send replies to, from thread_parent_id
// or reply_to (which must agree when both are given); 0 for none.
func replyTarget(req wire.SendMessage) (int64, error) {
	var seq int64
	for _, f := range []struct {
		name string
		v    *string
	}{{"thread_parent_id", req.ThreadParentID}, {"reply_to", req.ReplyTo}} {
		if f.v == nil || *f.v == "" {
			continue
		}
		n, err := letagents.ParseMessageID(*f.v)
		if err != nil || n == 0 {
			return 0, letagents.Errorf(letagents.Invalid, "%s must be a message id like msg_42", f.name)
		}
		if seq != 0 && n != seq {
			return 0, letagents.Errorf(letagents.Invalid, "thread_parent_id and reply_to name different messages; give one")
		}
		seq = n
	}
	return seq, nil
}

func (s *server) readMessages(w http.ResponseWriter, r *http.Request, c call) error {
	q, err := pageQuery(r.URL.Query(), true)
	if err != nil {
		return err
	}
	page, err := s.Store.Messages(r.Context(), c.room, q)
	if err != nil {
		return err
	}
	return writePage(w, r, c.room, page, q.Before > 0)
}

func writePage(w http.ResponseWriter, r *http.Request, id string, page letagents.MessagePage, backward bool) error {
	j, err := toPage(r, id, page, backward)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, j)
	return nil
}

// limitParam reads ?limit: def when absent, else a whole number from 1 to
// max.
func limitParam(v url.Values, def, max int) (int, error) {
	s := v.Get("limit")
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > max {
		return 0, letagents.Errorf(letagents.Invalid, "limit must be a whole number from 1 to %d", max)
	}
	return n, nil
}

// pageQuery reads ?after, ?before (when allowed) and ?limit.
func pageQuery(v url.Values, allowBefore bool) (store.MessageQuery, error) {
	var q store.MessageQuery
	var err error
	if q.Limit, err = limitParam(v, letagents.DefaultPageSize, letagents.MaxPageSize); err != nil {
		return q, err
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
