package api

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/letagents/letagents-go/shared/actors"
	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/markdown"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/wire"
)

func toMessage(m letagents.Message) wire.Message {
	id := letagents.MessageID(m.Seq)
	j := wire.Message{ID: id, RoomID: m.RoomID, Sender: m.Sender, Text: m.Text,
		Source: optText(m.Source), Timestamp: letagents.FormatTime(m.CreatedAt), AgentPromptKind: optText(string(m.PromptKind)),
		ThreadRootID: id}
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
	j.Mentions, j.UnreadBy = toMessageAgents(m.Mentions), toMessageAgents(m.UnreadBy)
	for _, d := range m.SeenBy {
		j.SeenBy = append(j.SeenBy, toSeenBy(d))
	}
	if !m.PinnedAt.IsZero() {
		j.PinnedAt, j.PinnedBy = letagents.FormatTime(m.PinnedAt), m.PinnedBy
	}
	if m.GitHubEvent > 0 {
		j.GitHubEventID = letagents.WireID(GitHubEventPrefix, m.GitHubEvent)
	}
	return j
}

// renderedMessage is a message read with ?render=html. Its text is
// rendered as the page is encoded, so that messages cut from a full page
// cost nothing.
type renderedMessage wire.Message

func (m renderedMessage) MarshalJSON() ([]byte, error) {
	b, err := encodeJSON(wire.RenderedMessage{Message: wire.Message(m), HTML: markdown.HTML(m.Text)})
	if err != nil || len(b) <= letagents.MaxPageBytes {
		return b, err
	}
	// Alone too big for a page: the reader shows this one's text as it is.
	return encodeJSON(wire.Message(m))
}

// renderOption reads ?render: html adds each message's text rendered
// (wire.RenderedMessage) and its receipts (seen_by, unread_by), for the
// web page; without it a page is what agents have always read.
func renderOption(v url.Values) (bool, error) {
	switch v.Get("render") {
	case "":
		return false, nil
	case "html":
		return true, nil
	}
	return false, letagents.Errorf(letagents.Invalid, "render must be html, or left out")
}

// toPage lists messages: the page without them (its messages null), and
// their JSON, to be spliced in where the null is. The room's id goes
// under project_id on the legacy routes and under room_id on the current
// ones, as each kind of client expects; the other key is left out.
// has_more says, as the original's does, whether more messages lie the
// way the page was read: newer ones reading forward, older ones reading
// backward (as has_older does too).
func toPage(r *http.Request, roomID string, p letagents.MessagePage, backward, render bool) (wire.Page, pageItems, error) {
	msgs := make([]wire.Message, len(p.Messages))
	for i, m := range p.Messages {
		msgs[i] = toMessage(m)
	}
	if backward {
		// Keep the newest when cutting a page read backward.
		slices.Reverse(msgs)
	}
	var items pageItems
	var cut bool
	var err error
	if render {
		rendered := make([]renderedMessage, len(msgs))
		for i, m := range msgs {
			rendered[i] = renderedMessage(m)
		}
		items, cut, err = withinPage(rendered)
	} else {
		items, cut, err = withinPage(msgs)
	}
	if err != nil {
		return wire.Page{}, items, err
	}
	j := wire.Page{HasMore: p.HasMore || cut}
	if backward {
		items.reversed = true
		older := p.HasOlder || cut
		j.HasMore, j.HasOlder = older, &older
	}
	if strings.HasPrefix(r.URL.Path, "/projects/") {
		j.ProjectID = roomID
	} else {
		j.RoomID = roomID
	}
	return j, items, nil
}

func (s *server) sendMessage(w http.ResponseWriter, r *http.Request, c call) error {
	msg, created, err := s.send(w, r, c)
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

// send checks and sends a message in one statement (store.Send): the
// token of the client's send rate, the worker session that signs the
// message (never the body) or the claims on the body's sender, and the
// insert. A request refused before that statement still takes its token,
// as the sender gate's used to (refuseSend). Refusals come in the order
// they did when each was a round trip of its own: the rate, the session
// or the claims (senderSource), the message, the room and the parent.
func (s *server) send(w http.ResponseWriter, r *http.Request, c call) (letagents.Message, bool, error) {
	var req wire.SendMessage
	if err := decode(w, r, &req); err != nil {
		return letagents.Message{}, false, s.refuseSend(r, err)
	}
	m := letagents.NewMessage{RoomID: c.room, Sender: req.Sender, Text: req.Text, ClientMessageID: req.ClientMessageID}
	var err error
	if m.PromptKind, err = letagents.ParsePromptKind(req.AgentPromptKind); err != nil {
		return letagents.Message{}, false, s.refuseSend(r, err)
	}
	if m.ThreadParentSeq, err = replyTarget(req); err != nil {
		return letagents.Message{}, false, s.refuseSend(r, err)
	}
	return s.sendAs(r, c, req, m, true)
}

// sendAs is send once the body is read: take says whether the request's
// rate token is still to take. An owner token the middleware left to the
// statement (callerOf) is taken for one that signs its account in until
// the statement says: a refusal before it, or a token that signs nobody
// in, has the caller looked up and judged again, as it always was (the
// token taken once).
func (s *server) sendAs(r *http.Request, c call, req wire.SendMessage, m letagents.NewMessage, take bool) (letagents.Message, bool, error) {
	who, bearer := callerOf(r)
	refuse := func(err error) (letagents.Message, bool, error) {
		switch {
		case bearer != "":
			if err := s.resolve(r); err != nil {
				return letagents.Message{}, false, err
			}
			return s.sendAs(r, c, req, m, take)
		case take:
			err = s.refuseSend(r, err)
		}
		return letagents.Message{}, false, err
	}
	in := store.Send{Now: s.now(), AccountID: who.Account.ID}
	if take {
		in.Take = s.Auth.SendTake(clientAddress(r))
	}
	if bearer != "" {
		who = auth.Identity{Via: auth.ViaOwnerToken}
		in.OwnerTokenHash = auth.HashToken(bearer)
	}
	creds, withSession := sessionCredentials(r, req.SessionCredentials)
	var owner string
	if withSession {
		if err := precheckSession(who, creds); err != nil {
			return refuse(err)
		}
		// The session's actor label will be the sender, whatever the
		// body's; the statement checks that label too.
		signed := m
		signed.Sender, signed.Source = letagents.SourceAgent, letagents.SourceAgent
		if err := signed.Validate(); err != nil {
			if bearer == "" {
				if _, serr := s.agentSession(r, c.room, req.SessionCredentials, true); serr != nil {
					err = serr
				}
			}
			return refuse(err)
		}
		in.SessionTokenHash = auth.HashToken(creds.AgentSessionToken)
		in.SessionID, _ = letagents.ParseWireID(letagents.AgentSessionPrefix, creds.AgentSessionID)
	} else {
		// Bad input, such as the server's own name, is refused as such
		// before anyone's claims are read.
		if err := m.Validate(); err != nil {
			return refuse(err)
		}
		in.Label = actors.CanonicalLabel(m.Sender)
		in.Display, owner, _ = actors.ParseActorLabel(in.Label)
		in.Owner, in.ViaOwnerToken = owner, who.AgentToken()
		if !in.ViaOwnerToken {
			in.NameKeys = store.NameKeys(m.Sender, in.Display, owner)
		}
		m.Source = who.Source()
	}
	in.Message = m
	out, err := s.Store.Send(r.Context(), in)
	if err != nil {
		return letagents.Message{}, false, err
	}
	if bearer != "" {
		if out.Owner == nil {
			// The token signs nobody in, and the statement sent nothing:
			// judge the send again as whoever the caller turns out to be,
			// its token taken.
			if err := s.resolve(r); err != nil || out.Wait > 0 {
				return letagents.Message{}, false, cmp.Or(err, s.Auth.SendRefused(out.Wait))
			}
			return s.sendAs(r, c, req, m, false)
		}
		who = auth.Identity{Account: out.Owner.Account, Via: auth.ViaOwnerToken, CredentialID: out.Owner.TokenID}
		settle(r, who)
	}
	if out.Wait > 0 {
		return letagents.Message{}, false, s.Auth.SendRefused(out.Wait)
	}
	if withSession {
		if _, err = checkSession(who, creds, out.Session, c.room, true); err == nil {
			final := m
			final.Sender, final.Source = out.Session.ActorLabel, letagents.SourceAgent
			err = final.Validate()
		}
	} else {
		_, err = claimSource(who, out.Claim, "sender", m.Sender, owner, func() error {
			if !out.NameFree {
				return letagents.NameHeld("sender", m.Sender)
			}
			return nil
		})
	}
	if err == nil {
		err = out.Refusal(m)
	}
	return out.Message, out.Created, err
}

// refuseSend answers a send refused before its statement: the request
// still counts against the client's send rate, and its 429 comes first.
func (s *server) refuseSend(r *http.Request, err error) error {
	if lerr := s.Auth.LimitSend(r.Context(), clientAddress(r)); lerr != nil {
		return lerr
	}
	return err
}

// nameSource judges a name that a caller with no worker session writes
// under in a room (field names it: a task's created_by, a claim's
// assignee, a reasoning session's actor) as claimSource says, once its
// form has been checked.
func (s *server) nameSource(r *http.Request, roomID, field, name string) (string, error) {
	who := identity(r)
	label := actors.CanonicalLabel(name)
	display, owner, _ := actors.ParseActorLabel(label)
	c, err := s.Store.SenderClaim(r.Context(), roomID, label, display, owner, who.Account.ID)
	if err != nil {
		return "", err
	}
	return claimSource(who, c, field, name, owner, func() error {
		held, err := s.Store.NameHeldByOthers(r.Context(), roomID, store.NameKeys(name, display, owner), who.Account.ID)
		if err == nil && held {
			err = letagents.NameHeld(field, name)
		}
		return err
	})
}

// claimSource is the source of what who writes under name (field names
// it) with no worker session to vouch for it, given the claims c on the
// name in the room, or why it may not; unclaimed refuses the name when
// someone else holds it (store.NameHeldByOthers): a name a browser or an
// anonymous caller writes under, its display part or its owner part, may
// not read as a person's login or display name, an agent's display name,
// or an agent session's in the room. Only a worker session or an owner
// token can prove an agent's name, and only the account itself a
// person's; a name nobody holds stays free.
//
// An agent session's label names that agent in the room, so nobody but its
// account may write under it. An owner token is an agent's credential, but
// what it writes reads as an agent's (source "agent") only under a label the
// account owns: one of its sessions' in the room, or one made of one of
// its agents' display and owner labels. Any other actor label that names
// an owner ("<name> | <owner>'s agent | <ide>") is refused, as a claim to
// be someone else's agent; a plain name is stored with no source, as
// unverified. Labels compare in actors.CanonicalLabel form, ignoring case.
func claimSource(who auth.Identity, c store.SenderClaim, field, name, owner string, unclaimed func() error) (string, error) {
	switch {
	case c.Others && !c.Session:
		return "", letagents.Errorf(letagents.Forbidden,
			"%s %q is the actor label of another account's agent in this room; act under a name of your own", field, name)
	case c.Session || c.Agent:
		return who.Source(), nil
	case !who.AgentToken():
		return who.Source(), unclaimed()
	case owner != "":
		return "", letagents.Errorf(letagents.Forbidden,
			"%s %q names an agent this account does not own; act as your own agent's actor label, or pass its agent_session_id and agent_session_token", field, name)
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
	q := pageQuery(r.URL.Query(), true)
	render, err := renderOption(r.URL.Query())
	if err != nil {
		return err
	}
	// A read with session credentials (headers) surfaces its messages to
	// that session's agent.
	sess, err := s.agentSession(r, c.room, wire.SessionCredentials{}, false)
	if err != nil {
		return err
	}
	page, err := s.Store.Messages(r.Context(), c.room, q)
	if err != nil {
		return err
	}
	s.surfaced(r.Context(), sess, c.room, page.Messages, letagents.ViaRead)
	if render {
		if page, err = s.withReceipts(r.Context(), c.room, page); err != nil {
			return err
		}
	}
	return writePage(w, r, c.room, page, q.Before > 0, render)
}

func writePage(w http.ResponseWriter, r *http.Request, id string, page letagents.MessagePage, backward, render bool) error {
	j, items, err := toPage(r, id, page, backward, render)
	if err != nil {
		return err
	}
	defer items.release()
	writeJSONList(w, http.StatusOK, j, "messages", items)
	return nil
}

// pageQuery reads ?after, ?before (when allowed), ?limit and
// ?include_prompt_only. Given both, before wins and after is ignored, and
// a cursor that is no message id is no cursor (before one is the newest
// page), as the original reads them.
func pageQuery(v url.Values, allowBefore bool) store.MessageQuery {
	q := store.MessageQuery{Limit: queryLimit(v, letagents.DefaultPageSize, letagents.MaxPageSize),
		IncludePromptOnly: includePromptOnly(v.Get("include_prompt_only"))}
	if s := v.Get("before"); s != "" && allowBefore {
		q.Before = store.BeforeLatest
		if n, err := letagents.ParseMessageID(s); err == nil && n > 0 {
			q.Before = n
		}
		return q
	}
	if n, err := letagents.ParseMessageID(v.Get("after")); err == nil {
		q.After = n
	}
	return q
}

// includePromptOnly reads ?include_prompt_only as the original does: 1
// or true in any case.
func includePromptOnly(v string) bool { return v == "1" || strings.EqualFold(v, "true") }
