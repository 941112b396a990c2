package store

import (
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/letagents/letagents-go/shared/letagents"
)

// A batch's checked sends (Store.Send) go to the database as one
// statement over arrays of their values (sendSetSQL) rather than one
// statement each: a statement on the five tables a send writes costs the
// database 0.35–0.4 ms of CPU to start, check and end before the
// message's own 0.06 ms, and one statement of eight sends cost 0.13–0.18
// ms of backend CPU a send against 0.52–0.54 for eight pipelined
// (docs/benchmark.md). It gives each send what its own statement would
// have, run in the batch's order. A reply goes as a statement of its own,
// in its place (setRuns): its parent may be in the same batch, and its
// thread's counters moved by another. Takes from one rate bucket are
// folded in order, one after the other, as their statements would take
// them (a recursive CTE over the bucket's row, locked), and the row
// written once; the buckets are made first (bucketsSQL), so that the
// fold always starts from a locked row, whoever made it. A client id
// twice fails the statement on its unique index, and the batch runs
// again send by send, as any refused batch does.

// setSend is a checked send's values as sendSetSQL reads them: one
// element of each of its arrays.
type setSend struct {
	room, sender, text, channel string
	source, clientID, kind      pgtype.Text
	publisher                   pgtype.Int8
	mentionKeys, nameKeys       pgtype.Text // JSON arrays; null for none
	bucketKind, bucketKey       pgtype.Text
	full, takeNow               pgtype.Timestamptz
	every                       pgtype.Interval
	sessionHash, ownerHash      []byte
	sessionID                   int64
	now                         time.Time
	account                     int64
	label, display, owner       string
	viaOwnerToken               bool
	seenBefore                  time.Time
	ring                        bool // rings with the message when alone in its room (Store.WaitersFrom)
}

// setValues is in's values, made only when in goes in a statement of
// several: a send that goes alone (every send of a Lambda instance) pays
// nothing for them.
func (s *Store) setValues(in Send) setSend {
	m := in.Message
	channel := s.RoomChannel(m.RoomID)
	v := setSend{room: m.RoomID, sender: m.Sender, text: m.Text, channel: channel,
		source: optText(m.Source), clientID: optText(m.ClientMessageID), kind: optText(string(m.PromptKind)),
		publisher:   pgtype.Int8{Int64: m.PublisherSessionID, Valid: m.PublisherSessionID > 0},
		mentionKeys: jsonKeys(mentionKeys(m.Text)), nameKeys: jsonKeys(in.NameKeys),
		sessionHash: in.SessionTokenHash, ownerHash: in.OwnerTokenHash, sessionID: in.SessionID, now: in.Now,
		account: in.AccountID, label: in.Label, display: in.Display, owner: in.Owner, viaOwnerToken: in.ViaOwnerToken,
		seenBefore: in.Now.Add(-letagents.SeenStep), ring: s.ringsWith(channel)}
	if t := in.Take; t != nil {
		v.bucketKind, v.bucketKey = optText(t.Kind), optText(t.Key)
		v.full = pgtype.Timestamptz{Time: t.Now.Add(-time.Minute), Valid: true}
		v.every = pgtype.Interval{Microseconds: (time.Minute / time.Duration(t.PerMinute)).Microseconds(), Valid: true}
		v.takeNow = pgtype.Timestamptz{Time: t.Now, Valid: true}
	}
	return v
}

func optText(s string) pgtype.Text { return pgtype.Text{String: s, Valid: s != ""} }

// jsonKeys is keys as a JSON array, null for none.
func jsonKeys(keys []string) pgtype.Text {
	if len(keys) == 0 {
		return pgtype.Text{}
	}
	b, _ := json.Marshal(keys) // strings always encode
	return pgtype.Text{String: string(b), Valid: true}
}

// setRuns splits a batch, in its order, into the runs that go as one
// statement each: consecutive checked sends that are not replies, all
// signed by worker sessions or none (sendSetSQL's two variants), and
// every other send alone.
func setRuns(batch []*roomSend) [][]*roomSend {
	var runs [][]*roomSend
	open := false // the last run takes more checked sends of its kind
	for _, rs := range batch {
		if open && rs.checked != nil && rs.checked.signed() == runs[len(runs)-1][0].checked.signed() {
			runs[len(runs)-1] = append(runs[len(runs)-1], rs)
			continue
		}
		runs, open = append(runs, []*roomSend{rs}), rs.checked != nil
	}
	return runs
}

// queueBuckets queues bucketsSQL for the takes of the runs of more than
// one send, if any.
func queueBuckets(b *pgx.Batch, runs [][]*roomSend) {
	var kinds, keys []string
	var purgeBefore time.Time
	for _, run := range runs {
		if len(run) == 1 {
			continue
		}
		for _, rs := range run {
			if t := rs.checked.Take; t != nil {
				kinds, keys = append(kinds, t.Kind), append(keys, t.Key)
				if stale := t.Now.Add(-staleBuckets); purgeBefore.IsZero() || stale.Before(purgeBefore) {
					purgeBefore = stale
				}
			}
		}
	}
	if kinds != nil {
		b.Queue(bucketsSQL, kinds, keys, purgeBefore)
	}
}

// bucketsSQL makes the buckets $1 (kinds) and $2 (keys) that are not
// there yet, empty since ever, for sendSetSQL to take from, and purges
// the buckets full since before $3 when it made one, as a take that
// makes a bucket does.
const bucketsSQL = `
	WITH made AS (
		INSERT INTO rate_buckets (kind, key, empty_at, allowed)
		SELECT DISTINCT kind, key, '-infinity'::timestamptz, true FROM unnest($1::text[], $2::text[]) AS u(kind, key)
		ON CONFLICT (kind, key) DO NOTHING
		RETURNING 1
	)
	DELETE FROM rate_buckets WHERE empty_at < $3 AND EXISTS (SELECT 1 FROM made)`

// queueSet queues run, checked sends of one kind, as one sendSetSQL,
// each send's row read by its fill.
func (s *Store) queueSet(b *pgx.Batch, run []*roomSend) {
	ins := make([]*Send, len(run))
	for i, rs := range run {
		ins[i] = rs.checked
	}
	n := len(run)
	b.Queue(setStatement(ins[0]), s.setArgs(ins)...).Query(func(rows pgx.Rows) error {
		i := 0
		for ; rows.Next() && i < n; i++ {
			run[i].err = run[i].fill(rows)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			for _, rs := range run {
				rs.err = err
			}
			return err
		}
		for _, rs := range run[i:] {
			rs.err = pgx.ErrNoRows
		}
		return nil
	})
}

// setArgs are sendSetSQL's arguments for ins, in their order.
func (s *Store) setArgs(ins []*Send) []any {
	n := len(ins)
	var (
		rooms, senders, texts, channels, labels, displays, owners = make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		sources, clientIDs, kinds, mentions, names, bucketKinds, bucketKeys = make([]pgtype.Text, n), make([]pgtype.Text, n),
			make([]pgtype.Text, n), make([]pgtype.Text, n), make([]pgtype.Text, n), make([]pgtype.Text, n), make([]pgtype.Text, n)
		publishers                 = make([]pgtype.Int8, n)
		fulls, takeNows            = make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n)
		everys                     = make([]pgtype.Interval, n)
		sessionHashes, ownerHashes = make([][]byte, n), make([][]byte, n)
		sessionIDs, accounts       = make([]int64, n), make([]int64, n)
		nows, seenBefores          = make([]time.Time, n), make([]time.Time, n)
		viaOwnerTokens, rings      = make([]bool, n), make([]bool, n)
	)
	for i, in := range ins {
		v := s.setValues(*in)
		rooms[i], senders[i], texts[i], channels[i] = v.room, v.sender, v.text, v.channel
		labels[i], displays[i], owners[i] = v.label, v.display, v.owner
		sources[i], clientIDs[i], kinds[i], mentions[i], names[i] = v.source, v.clientID, v.kind, v.mentionKeys, v.nameKeys
		bucketKinds[i], bucketKeys[i], fulls[i], takeNows[i], everys[i] = v.bucketKind, v.bucketKey, v.full, v.takeNow, v.every
		publishers[i], sessionHashes[i], ownerHashes[i], sessionIDs[i] = v.publisher, v.sessionHash, v.ownerHash, v.sessionID
		accounts[i], nows[i], seenBefores[i], viaOwnerTokens[i], rings[i] = v.account, v.now, v.seenBefore, v.viaOwnerToken, v.ring
	}
	return []any{rooms, senders, texts, sources, channels, publishers, clientIDs, kinds, mentions, bucketKinds,
		bucketKeys, fulls, everys, takeNows, sessionHashes, sessionIDs, nows, accounts, labels, displays, owners,
		viaOwnerTokens, names, ownerHashes, seenBefores, letagents.MaxSenderBytes, rings}
}

// genericPlan makes the statements after it in the batch's transaction
// run on their generic plans: left to choose, PostgreSQL planned
// sendSetSQL afresh each time, which cost a lone send 1.4 ms.
const genericPlan = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`

// sendSetSQL is checkedSQL over arrays of its sends' values, $1…$25 and
// $27 (queueSet), one row each, in their order; $26 is
// letagents.MaxSenderBytes. No send is a reply (setRuns), and every
// bucket taken from is there (bucketsSQL). The takes of each bucket are
// folded in the sends' order; the sends that pass are numbered in their
// rooms in their order, each room's counter moved once. A room rings
// once: with its message (ringSQL) when the statement sends it one and
// the send asks for it ($27), else plainly with its newest number.
//
// Like checkedSQL it comes in two variants, for sends worker sessions
// sign (signed) and for sends they do not, each without what only the
// other reads (the sessions and their touch, or the claims and the names
// others hold); a run holds sends of one kind (setRuns). Both take the
// same arguments: the unsigned one types the one it does not read
// (letagents.MaxSenderBytes) in a first CTE that never runs.
func sendSetSQL(signed bool) string {
	var unread, checks, sender, source, publisher, ok, from string
	if signed {
		checks = `
	), sess AS (
		SELECT i.n, s.id, s.room_id, s.owner_account_id, s.session_kind, s.actor_label, s.label_reserved, s.ended_at
		FROM input i JOIN caller c ON c.n = i.n LEFT JOIN took t ON t.n = i.n
		JOIN agent_sessions s ON s.token_hash = i.sess_hash
		WHERE coalesce(t.allowed, true) AND c.signed
	), touch AS (
		UPDATE agent_sessions a SET last_seen_at = x.now
		FROM (SELECT s.id, max(i.now) AS now, max(i.seen_before) AS before FROM sess s JOIN input i ON i.n = s.n GROUP BY s.id) x
		WHERE a.id = x.id AND a.last_seen_at <= x.before
	), verdict AS (
		SELECT i.n, coalesce(t.allowed, true) AS allowed,
			false AS claim_session, false AS claim_others, false AS claim_agent, ` + setFoundSQL + `, true AS name_free
		FROM input i LEFT JOIN took t ON t.n = i.n`
		sender, source, publisher = `s.actor_label`, `'`+letagents.SourceAgent+`'`, `s.id`
		ok = `s.id = i.sess_id AND s.owner_account_id = cl.account AND s.room_id = i.room
				AND s.ended_at IS NULL AND s.session_kind = '` + letagents.SessionWorker + `'
				AND octet_length(s.actor_label) <= $26 AND s.actor_label !~ '^\s*$' AND NOT s.label_reserved`
		from = ` LEFT JOIN sess s ON s.n = i.n`
	} else {
		checks = `
	), claim AS (
		SELECT i.n, c.* FROM input i JOIN caller cl ON cl.n = i.n
		CROSS JOIN LATERAL (` + claimSQL("i.room", "i.label", "cl.account", "i.display", "i.owner") + `) c
	), verdict AS (
		SELECT i.n, coalesce(t.allowed, true) AS allowed,
			c.session AS claim_session, c.others AS claim_others, c.agent AS claim_agent, ` + setFoundSQL + `,
			NOT ` + nameHeldSQL("i.nkeys", "cl.account", "i.room") + ` AS name_free
		FROM input i JOIN caller cl ON cl.n = i.n JOIN claim c ON c.n = i.n LEFT JOIN took t ON t.n = i.n`
		unread = ` unread AS (SELECT $26::integer),`
		sender, publisher = `i.sender`, `i.publisher`
		source = `CASE WHEN i.via_owner AND NOT (v.claim_session OR v.claim_agent) THEN NULL ELSE i.source END`
		ok = `NOT (v.claim_others AND NOT v.claim_session)
				AND (v.claim_session OR v.claim_agent OR (NOT i.via_owner AND v.name_free) OR (i.via_owner AND i.owner = ''))`
	}
	return `
	WITH RECURSIVE` + unread + ` input AS (
		SELECT u.*,
			CASE WHEN u.mention_keys IS NOT NULL THEN ARRAY(SELECT jsonb_array_elements_text(u.mention_keys::jsonb)) END AS mkeys,
			ARRAY(SELECT jsonb_array_elements_text(u.name_keys::jsonb)) AS nkeys
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::text[],
			$9::text[], $10::text[], $11::text[], $12::timestamptz[], $13::interval[], $14::timestamptz[], $15::bytea[],
			$16::bigint[], $17::timestamptz[], $18::bigint[], $19::text[], $20::text[], $21::text[], $22::boolean[],
			$23::text[], $24::bytea[], $25::timestamptz[], $27::boolean[])
			WITH ORDINALITY AS u(room, sender, text, source, channel, publisher, client_id, kind, mention_keys, bkind, bkey,
				bfull, bevery, bnow, sess_hash, sess_id, now, account, label, display, owner, via_owner, name_keys,
				owner_hash, seen_before, ring, n)
	), owner AS (
		SELECT i.n, ` + accountColumns + `, t.id AS token_id FROM input i
		JOIN owner_tokens t ON t.token_hash = i.owner_hash JOIN accounts a ON a.id = t.account_id
	), caller AS (
		SELECT i.n, CASE WHEN i.owner_hash IS NULL THEN i.account ELSE coalesce(o.id, 0) END AS account,
			i.owner_hash IS NULL OR o.id IS NOT NULL AS signed
		FROM input i LEFT JOIN owner o ON o.n = i.n
	), bucket AS (
		SELECT kind, key, empty_at FROM rate_buckets
		WHERE (kind, key) IN (SELECT bkind, bkey FROM input WHERE bkind IS NOT NULL)
		FOR UPDATE
	), takes AS (
		SELECT n, bkind, bkey, bfull, bevery, bnow, row_number() OVER (PARTITION BY bkind, bkey ORDER BY n) AS j
		FROM input WHERE bkind IS NOT NULL
	), took (n, kind, key, j, empty_at, allowed) AS (
		SELECT t.n, t.bkind, t.bkey, t.j,
			CASE WHEN greatest(b.empty_at, t.bfull) + t.bevery <= t.bnow THEN greatest(b.empty_at, t.bfull) + t.bevery ELSE b.empty_at END,
			greatest(b.empty_at, t.bfull) + t.bevery <= t.bnow
		FROM takes t JOIN bucket b ON b.kind = t.bkind AND b.key = t.bkey WHERE t.j = 1
		UNION ALL
		SELECT t.n, t.bkind, t.bkey, t.j,
			CASE WHEN greatest(p.empty_at, t.bfull) + t.bevery <= t.bnow THEN greatest(p.empty_at, t.bfull) + t.bevery ELSE p.empty_at END,
			greatest(p.empty_at, t.bfull) + t.bevery <= t.bnow
		FROM took p JOIN takes t ON t.bkind = p.kind AND t.bkey = p.key AND t.j = p.j + 1
	), take AS (
		UPDATE rate_buckets b SET empty_at = l.empty_at, allowed = l.allowed
		FROM (SELECT DISTINCT ON (kind, key) kind, key, empty_at, allowed FROM took ORDER BY kind, key, j DESC) l
		WHERE b.kind = l.kind AND b.key = l.key` + checks + `
	), decided AS (
		SELECT i.n, i.room, i.text, i.client_id, i.kind, i.channel, i.mkeys, i.ring,
			` + sender + ` AS sender, ` + source + ` AS source, ` + publisher + ` AS publisher,
			coalesce(v.allowed AND cl.signed AND v.room_found AND NOT v.repeat AND ` + ok + `, false) AS ok
		FROM input i JOIN caller cl ON cl.n = i.n JOIN verdict v ON v.n = i.n` + from + `
	), numbered AS (
		SELECT d.*, row_number() OVER (PARTITION BY d.room ORDER BY d.n) AS k, count(*) OVER (PARTITION BY d.room) AS cnt
		FROM decided d WHERE d.ok
	), next AS (
		UPDATE rooms r SET last_event = r.last_event + c.cnt, last_seq = r.last_seq + c.cnt
		FROM (SELECT room, count(*) AS cnt FROM numbered GROUP BY room) c WHERE r.id = c.room
		RETURNING r.id, r.last_seq, r.last_event
	), placed AS (
		SELECT nb.*, nx.last_seq - nb.cnt + nb.k AS seq, nx.last_event - nb.cnt + nb.k AS event
		FROM numbered nb JOIN next nx ON nx.id = nb.room
	), logged AS (
		INSERT INTO room_events (room_id, seq, kind, ref, ref_id)
		SELECT room, event, '` + string(letagents.EventMessage) + `', seq, NULL FROM placed
	), mentioned AS (
		SELECT p.n, m.ids, m.refs FROM placed p CROSS JOIN LATERAL (
			SELECT array_agg(s.id ORDER BY s.id) AS ids, ` + mentionRefsSQL("s") + ` AS refs
			FROM agent_sessions s WHERE p.mkeys IS NOT NULL AND room_id = p.room AND ended_at IS NULL AND id IS DISTINCT FROM p.publisher
				AND (` + mentionNameSQL + ` = ANY(p.mkeys) OR lower(` + collapsedSQL("actor_label") + `) = ANY(p.mkeys)
					OR lower(` + collapsedSQL("display_name") + `) = ANY(p.mkeys))) m
	), ins AS (
		INSERT INTO messages AS m (room_id, seq, sender, text, source, thread_parent_seq, thread_root_seq, created_at,
			publisher_session_id, client_message_id, agent_prompt_kind, mentions)
		SELECT p.room, p.seq, p.sender, p.text, p.source, NULL, NULL, date_trunc('milliseconds', clock_timestamp()),
			p.publisher, p.client_id, p.kind, mm.ids
		FROM placed p LEFT JOIN mentioned mm ON mm.n = p.n
		RETURNING room_id, seq, sender, source, publisher_session_id, thread_root_seq, created_at,
			(SELECT pg_notify(p.channel, CASE WHEN p.cnt = 1 AND p.ring THEN ` + setRingSQL + ` ELSE nx.last_seq::text END)
				FROM placed p JOIN next nx ON nx.id = p.room WHERE p.room = m.room_id AND p.seq = m.seq)
	)
	SELECT t.allowed AS take_allowed, t.empty_at AS take_empty_at, ` + sessionColumnsSQL(signed) + `,
		v.claim_session AS session, v.claim_others AS others, v.claim_agent AS agent, v.room_found, true AS parent_found,
		v.repeat, v.name_free,
		x.sender AS sent_sender, x.source AS sent_source, x.publisher_session_id AS sent_publisher,
		x.seq, x.thread_root_seq, x.created_at,
		` + noQuoteColumns + `,
		m.refs AS mention_refs,
		o.id AS owner_account_id, o.token_id AS owner_token_id, o.provider AS owner_provider,
		o.provider_user_id AS owner_provider_user_id, o.login AS owner_login, o.display_name AS owner_display_name,
		o.avatar_url AS owner_avatar_url, o.created_at AS owner_created_at, o.updated_at AS owner_updated_at
	FROM input i JOIN verdict v ON v.n = i.n LEFT JOIN took t ON t.n = i.n` + from + `
		LEFT JOIN placed p ON p.n = i.n LEFT JOIN ins x ON x.room_id = p.room AND x.seq = p.seq
		LEFT JOIN mentioned m ON m.n = i.n LEFT JOIN owner o ON o.n = i.n
	ORDER BY i.n`
}

// setRingSQL is sendSetSQL's ringSQL of the message m that placed p
// put in its room: no quote, its mentioned sessions, p's event.
var setRingSQL = ringSQL(noQuoteColumns+`, mm.refs AS mention_refs, p.event AS event`, `(SELECT) AS one LEFT JOIN mentioned mm ON mm.n = p.n`)

// setFoundSQL is sendSetSQL's verdict on its send i's room and client id.
const setFoundSQL = `EXISTS (SELECT 1 FROM rooms WHERE id = i.room) AS room_found,
			(i.client_id IS NOT NULL AND EXISTS (SELECT 1 FROM messages WHERE room_id = i.room AND client_message_id = i.client_id)) AS repeat`

// sendSetSignedSQL and sendSetUnsignedSQL are sendSetSQL's two variants.
var sendSetSignedSQL, sendSetUnsignedSQL = sendSetSQL(true), sendSetSQL(false)

// setStatement is the set statement of a run of in's kind.
func setStatement(in *Send) string {
	if in.signed() {
		return sendSetSignedSQL
	}
	return sendSetUnsignedSQL
}
