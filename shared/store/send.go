package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/letagents"
)

// RateTake is a token to take from a rate-limit bucket (Take) in a
// statement that does more.
type RateTake struct {
	Kind, Key string
	PerMinute int
	Now       time.Time
}

// Send is an API send: the message, the token it takes from the client's
// send rate, and what vouches for its sender, for Store.Send to check and
// send in one statement.
type Send struct {
	Message letagents.NewMessage // its Sender is the body's; Source and PublisherSessionID are Send's to find
	Take    *RateTake            // nil: the request took its token already
	// SessionTokenHash is the hash of a worker session's token, nil when
	// the caller gave none: with one, the session signs the message (its
	// actor label, source agent) once SessionID, AccountID and the room
	// match it and it is a live worker.
	SessionTokenHash []byte
	SessionID        int64 // the id the caller gave with the token; 0 when it was no session id
	Now              time.Time
	// Without a session, the claims on the sender's actor label in the
	// room (SenderClaim: Label, Display and Owner as it takes them) by
	// AccountID decide, as api.nameSource does: another account's
	// session's label is refused; one of the account's own, or its
	// agent's, is sent with the message's Source; else an owner token's
	// (ViaOwnerToken) is sent with no source and refused when it names an
	// owner, and anyone else's with its Source when none of NameKeys
	// (NameKeys of the sender and its parts; nil for an owner token's
	// send) is held by someone else, as NameHeldByOthers reads them.
	AccountID             int64
	Label, Display, Owner string
	ViaOwnerToken         bool
	NameKeys              []string
	// OwnerTokenHash is the hash of the caller's owner token when the
	// caller has not looked it up (nil otherwise): the statement reads
	// its account (Sent.Owner), which stands for AccountID, and sends
	// nothing, touching no session, unless the token signs someone in.
	// The caller sets the rest as for an owner token's send.
	OwnerTokenHash []byte
}

// OwnerToken is the account an owner token signs in, and the token's id.
type OwnerToken struct {
	Account letagents.Account
	TokenID int64
}

// Sent is what Store.Send found and did. Nothing was sent unless every
// check passed: the token taken (Wait 0), the session's or the claims'
// verdict, the room found, the parent found, and no message of the
// ClientMessageID yet. The caller reads the refusal from the facts in the
// order it checks them.
type Sent struct {
	Wait    time.Duration           // > 0: refused by the rate limit, and nothing else was read
	Session *letagents.AgentSession // the session of the token (its id, room, owner, kind, label, end); nil if none
	Claim   SenderClaim             // without a session
	Room    bool                    // the room exists
	Parent  bool                    // the message replied to, if any, is in the room and not prompt-only
	Repeat  bool                    // the room holds a message of the ClientMessageID
	Message letagents.Message       // the message sent, when Created
	Created bool
	Owner   *OwnerToken // the account of Send.OwnerTokenHash; nil when it was not given or signs nobody in
	// NameFree: none of Send.NameKeys is held by someone else (true when
	// none was given).
	NameFree bool
}

// Send takes the send's rate token, finds the worker session of its token
// (touching its last_seen_at when it is letagents.SeenStep old or more:
// AgentSessionByToken touches it always) or the claims
// on its sender, and appends the message when they allow it, in one
// statement: a send is one round trip. What it refuses past the rate
// limit it still counts: the token is taken, and the session touched,
// whatever the verdict. It goes alone, or in a batch with this process's
// other sends waiting when it does (turns).
//
// A repeat of a ClientMessageID sends nothing and reads the message of
// that id (a second round trip, for repeats only). A repeat that raced
// the first send to the id's unique index failed whole, taking no token:
// it runs again, and finds the repeat.
func (s *Store) Send(ctx context.Context, in Send) (Sent, error) {
	m := in.Message
	var out Sent
	var every time.Duration
	if t := in.Take; t != nil {
		if t.PerMinute < 1 {
			return out, fmt.Errorf("take a rate-limit token: perMinute %d is not positive", t.PerMinute)
		}
		every = time.Minute / time.Duration(t.PerMinute)
	}
	args, unlinked := s.checkedArgs(in)
	var row sendRow
	rs := &roomSend{sql: checkedStatement(in, unlinked), args: args, scan: collectOne(&row), fill: func(r pgx.CollectableRow) (err error) {
		row, err = pgx.RowToStructByName[sendRow](r)
		return err
	}}
	if m.ThreadParentSeq == 0 { // a reply goes alone (setRuns)
		rs.checked = &in
	}
	var err error
	for range 2 {
		if err = s.sendInTurn(ctx, m.RoomID, in.Take, rs); pgCode(err) != uniqueViolation || m.ClientMessageID == "" {
			break
		}
	}
	if err != nil {
		return out, fmt.Errorf("send message: %w", err)
	}
	if row.OwnerAccountID != nil {
		out.Owner = &OwnerToken{TokenID: *row.OwnerTokenID, Account: letagents.Account{ID: *row.OwnerAccountID,
			Provider: *row.OwnerProvider, ProviderUserID: *row.OwnerProviderUserID, Login: *row.OwnerLogin,
			DisplayName: *row.OwnerDisplayName, AvatarURL: *row.OwnerAvatarURL, CreatedAt: *row.OwnerCreatedAt,
			UpdatedAt: *row.OwnerUpdatedAt}}
	}
	if row.TakeAllowed != nil {
		if out.Wait = takeWait(*row.TakeAllowed, *row.TakeEmptyAt, every, in.Take.Now); out.Wait > 0 {
			return out, nil
		}
	}
	if row.SessionID != nil {
		out.Session = &letagents.AgentSession{ID: *row.SessionID, RoomID: *row.SessionRoomID, OwnerAccountID: *row.SessionOwnerAccountID,
			Kind: *row.SessionKind, ActorLabel: *row.SessionActorLabel, EndedAt: deref(row.SessionEndedAt)}
	}
	out.Claim, out.Room, out.Parent, out.Repeat, out.NameFree = row.SenderClaim, row.RoomFound, row.ParentFound, row.Repeat, row.NameFree
	switch {
	case row.Seq != nil:
		out.Created = true
		m.Sender, m.Source, m.PublisherSessionID = *row.SentSender, deref(row.SentSource), deref(row.SentPublisher)
		out.Message = letagents.Message{RoomID: m.RoomID, Seq: *row.Seq, Sender: m.Sender, Text: m.Text, Source: m.Source,
			PromptKind: m.PromptKind, ThreadParentSeq: m.ThreadParentSeq, ThreadRootSeq: deref(row.ThreadRootSeq),
			CreatedAt: *row.CreatedAt, ReplyTo: row.quote(m.ThreadParentSeq), Mentions: row.refs()}
	case out.Repeat:
		out.Message, err = s.messageByClientID(ctx, m.RoomID, m.ClientMessageID)
	}
	return out, err
}

// checkedStatement is the statement of in's variant (checkedSQL), whose
// message is unlinked or not (sendArgs).
func checkedStatement(in Send, unlinked bool) string {
	if in.signed() {
		return sendSigned.of(unlinked)
	}
	return sendUnsigned.of(unlinked)
}

// signed says whether a worker session signs in: the kind of send the
// statements' variants are for (checkedSQL, sendSetSQL).
func (in *Send) signed() bool { return in.SessionTokenHash != nil }

// checkedArgs are checkedSQL's arguments for in, whose take (if any)
// has a positive rate, and whether its message is unlinked (sendArgs).
func (s *Store) checkedArgs(in Send) (args []any, unlinked bool) {
	var takeArgs [6]any
	if t := in.Take; t != nil {
		takeArgs = [6]any{t.Kind, t.Key, t.Now.Add(-time.Minute), time.Minute / time.Duration(t.PerMinute), t.Now,
			t.Now.Add(-staleBuckets)}
	}
	var hash, ownerHash any
	if in.SessionTokenHash != nil {
		hash = in.SessionTokenHash
	}
	if in.OwnerTokenHash != nil {
		ownerHash = in.OwnerTokenHash
	}
	args, unlinked = sendArgs(s, in.Message)
	return append(append(args, takeArgs[:]...), hash, in.SessionID, in.Now, in.AccountID, in.Label,
		in.Display, in.Owner, in.ViaOwnerToken, in.NameKeys, ownerHash, letagents.MaxSenderBytes, in.Now.Add(-letagents.SeenStep)), unlinked
}

// checkedSQL is Store.Send's statement: sendSQL's $1…$11 (sendArgs),
// then $12…$17 the take (takeSQL's five, a null kind for none, and the
// purge's bound), $18 the session token's hash (null: no session), $19
// the session id given, $20 now, $21 the account, $22…$24 the label and
// its display and owner parts, $25 whether an owner token signed the
// caller in, $26 the keys of the sender's name (Send.NameKeys), $27 the owner token's
// hash when the caller left it to the statement (its account then stands
// for $21: caller), $28 letagents.MaxSenderBytes, $29 the last_seen_at
// a session seen before is touched (now less letagents.SeenStep).
//
// It comes in two variants: for a send a worker session signs (signed,
// $18 given) and for one it does not. Each leaves out what only the
// other reads, the session and its touch or the claims on the sender and
// the names others hold: set up for nothing, they cost a lone signed send
// 9–14% of its backend's CPU, an unsigned one 2–10% (docs/benchmark.md).
// Each of those comes for a message that replies or mentions and for an
// unlinked one (sendParts.unlinked), which finds no parent. All take the
// same arguments; the parameters a variant does not read are typed in
// its first CTE (unread), which never runs.
//
// The session is touched only past the rate limit, as when the take was
// its own statement, and only for an owner token that signs someone in.
// It is read, not locked: a send racing its session's end may be sent
// as the session was when the statement began.
// verdict reads the parent itself, as sendSQL's parent comes after it. A
// session's actor label, which becomes the sender, is checked as the
// body's sender is before the statement (NewMessage.Validate): not
// blank, not too long, and not the server's name, which the session
// keeps judged from its creation (label_reserved).
func checkedSQL(signed, unlinked bool) string {
	common := `
	), owner AS (
		SELECT ` + accountColumns + `, t.id AS token_id FROM owner_tokens t JOIN accounts a ON a.id = t.account_id
		WHERE $27::bytea IS NOT NULL AND t.token_hash = $27
	), caller AS (
		SELECT CASE WHEN $27::bytea IS NULL THEN $21::bigint ELSE coalesce((SELECT id FROM owner), 0) END AS account,
			$27::bytea IS NULL OR EXISTS (SELECT 1 FROM owner) AS signed
	), take AS (` + takeSQL(12, "$12::text IS NOT NULL") + `
	), purge AS (
		DELETE FROM rate_buckets WHERE empty_at < $17 AND EXISTS (SELECT 1 FROM take WHERE inserted)`
	parentFound := `($5::bigint IS NULL OR EXISTS (SELECT 1 FROM messages WHERE room_id = $1 AND seq = $5 AND ` + visible + `))`
	unread := ""
	if unlinked {
		parentFound, unread = "true", ", "+unlinkedUnread
	}
	found := `EXISTS (SELECT 1 FROM rooms WHERE id = $1) AS room_found, ` + parentFound + ` AS parent_found,
			($8::text IS NOT NULL AND EXISTS (SELECT 1 FROM messages WHERE room_id = $1 AND client_message_id = $8)) AS repeat`
	passed := `v.allowed AND caller.signed AND v.room_found AND v.parent_found AND NOT v.repeat`
	var checks string
	var parts sendParts
	if signed {
		checks = `
	WITH unread AS (SELECT $2::text, $4::text, $7::bigint, $22::text, $23::text, $24::text, $25::boolean, $26::text[]` + unread + common + `
	), sess AS (
		SELECT id, room_id, owner_account_id, session_kind, actor_label, label_reserved, ended_at FROM agent_sessions
		WHERE token_hash = $18 AND coalesce((SELECT allowed FROM take), true) AND (SELECT signed FROM caller)
	), touch AS (
		UPDATE agent_sessions SET last_seen_at = $20 WHERE id = (SELECT id FROM sess) AND last_seen_at <= $29
	), verdict AS (
		SELECT coalesce((SELECT allowed FROM take), true) AS allowed,
			false AS claim_session, false AS claim_others, false AS claim_agent, ` + found + `, true AS name_free
	), `
		parts = sendParts{
			sender:    `(SELECT actor_label FROM sess)`,
			source:    `'` + letagents.SourceAgent + `'`,
			publisher: `(SELECT id FROM sess)`,
			cond: `EXISTS (SELECT 1 FROM verdict v, caller WHERE ` + passed + `
		AND EXISTS (SELECT 1 FROM sess WHERE id = $19 AND owner_account_id = caller.account AND room_id = $1
			AND ended_at IS NULL AND session_kind = '` + letagents.SessionWorker + `'
			AND octet_length(actor_label) <= $28 AND actor_label !~ '^\s*$' AND NOT label_reserved))`,
		}
	} else {
		checks = `
	WITH unread AS (SELECT $18::bytea, $19::bigint, $20::timestamptz, $28::integer, $29::timestamptz` + unread + common + `
	), claim AS (` + claimSQL("$1", "$22", "(SELECT account FROM caller)", "$23", "$24") + `
	), verdict AS (
		SELECT coalesce((SELECT allowed FROM take), true) AS allowed,
			c.session AS claim_session, c.others AS claim_others, c.agent AS claim_agent, ` + found + `,
			NOT ` + nameHeldSQL("$26::text[]", "(SELECT account FROM caller)", "$1") + ` AS name_free
		FROM claim c
	), `
		parts = sendParts{
			source: `CASE WHEN $25 AND NOT (SELECT claim_session OR claim_agent FROM verdict) THEN NULL ELSE $4 END`,
			cond: `EXISTS (SELECT 1 FROM verdict v, caller WHERE ` + passed + `
		AND NOT (v.claim_others AND NOT v.claim_session) AND (v.claim_session OR v.claim_agent OR (NOT $25 AND v.name_free) OR ($25 AND $24 = '')))`,
		}
	}
	parts.unlinked = unlinked
	from, sent := `verdict v LEFT JOIN take t ON true LEFT JOIN ins i ON true LEFT JOIN parent p ON true LEFT JOIN owner o ON true`, sentColumns
	if unlinked {
		from, sent = `verdict v LEFT JOIN take t ON true LEFT JOIN ins i ON true LEFT JOIN owner o ON true`, unlinkedSentColumns
	}
	if signed {
		from += ` LEFT JOIN sess s ON true`
	}
	return checks + sendSQL(parts) + `
	SELECT t.allowed AS take_allowed, t.empty_at AS take_empty_at, ` + sessionColumnsSQL(signed) + `,
		v.claim_session AS session, v.claim_others AS others, v.claim_agent AS agent, v.room_found, v.parent_found, v.repeat, v.name_free,
		i.sender AS sent_sender, i.source AS sent_source, i.publisher_session_id AS sent_publisher, ` + sent + `,
		o.id AS owner_account_id, o.token_id AS owner_token_id, o.provider AS owner_provider,
		o.provider_user_id AS owner_provider_user_id, o.login AS owner_login, o.display_name AS owner_display_name,
		o.avatar_url AS owner_avatar_url, o.created_at AS owner_created_at, o.updated_at AS owner_updated_at
	FROM ` + from
}

// sessionColumnsSQL are the columns of sendRow's session: of the signing
// session s (sess), or nulls for a variant that reads none.
func sessionColumnsSQL(signed bool) string {
	if signed {
		return `s.id AS session_id, s.room_id AS session_room_id, s.owner_account_id AS session_owner_account_id,
		s.session_kind, s.actor_label AS session_actor_label, s.ended_at AS session_ended_at`
	}
	return `NULL::bigint AS session_id, NULL::text AS session_room_id, NULL::bigint AS session_owner_account_id,
		NULL::text AS session_kind, NULL::text AS session_actor_label, NULL::timestamptz AS session_ended_at`
}

// sendSigned and sendUnsigned are Store.Send's statements (checkedSQL).
var sendSigned, sendUnsigned = checkedVariants(true), checkedVariants(false)

func checkedVariants(signed bool) sendVariants {
	return variantsOf(sendParts{}, func(p sendParts) string { return checkedSQL(signed, p.unlinked) })
}

// Refusal is why a send whose session or claims the caller found good
// sent nothing: its room or parent is missing; nil when it was sent or
// repeats one sent before. A verdict that disagrees with the caller's
// (nothing sent for no reason it can tell) is an error.
func (o Sent) Refusal(m letagents.NewMessage) error {
	switch {
	case !o.Room:
		return letagents.RoomNotFound()
	case !o.Parent:
		return noParent(m.ThreadParentSeq)
	case !o.Created && !o.Repeat:
		return fmt.Errorf("send message to %s: the statement's verdict refused what its caller's checks let through", m.RoomID)
	}
	return nil
}

// sendRow scans Store.Send's statement; what a verdict did not read is
// null.
type sendRow struct {
	TakeAllowed           *bool      `db:"take_allowed"`
	TakeEmptyAt           *time.Time `db:"take_empty_at"`
	SessionID             *int64     `db:"session_id"`
	SessionRoomID         *string    `db:"session_room_id"`
	SessionOwnerAccountID *int64     `db:"session_owner_account_id"`
	SessionKind           *string    `db:"session_kind"`
	SessionActorLabel     *string    `db:"session_actor_label"`
	SessionEndedAt        *time.Time `db:"session_ended_at"`
	SenderClaim
	RoomFound     bool       `db:"room_found"`
	ParentFound   bool       `db:"parent_found"`
	Repeat        bool       `db:"repeat"`
	NameFree      bool       `db:"name_free"`
	SentSender    *string    `db:"sent_sender"`
	SentSource    *string    `db:"sent_source"`
	SentPublisher *int64     `db:"sent_publisher"`
	Seq           *int64     `db:"seq"`
	ThreadRootSeq *int64     `db:"thread_root_seq"`
	CreatedAt     *time.Time `db:"created_at"`
	quoteRow
	mentionsRow
	OwnerAccountID      *int64     `db:"owner_account_id"`
	OwnerTokenID        *int64     `db:"owner_token_id"`
	OwnerProvider       *string    `db:"owner_provider"`
	OwnerProviderUserID *string    `db:"owner_provider_user_id"`
	OwnerLogin          *string    `db:"owner_login"`
	OwnerDisplayName    *string    `db:"owner_display_name"`
	OwnerAvatarURL      *string    `db:"owner_avatar_url"`
	OwnerCreatedAt      *time.Time `db:"owner_created_at"`
	OwnerUpdatedAt      *time.Time `db:"owner_updated_at"`
}
