package store

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/githubhook"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
)

// Delivery outcomes, as github_deliveries.status and the webhook's answer
// name them.
const (
	DeliveryProcessed = "processed"
	DeliveryIgnored   = "ignored"
	DeliveryFailed    = "failed"
)

// GitHubDelivery is one webhook delivery to record: its id
// (X-GitHub-Delivery), event name, action and repo room ("" for none).
type GitHubDelivery struct {
	ID, EventName, Action, RoomID string
	ReceivedAt                    time.Time
}

// DeliveryOutcome is what became of a delivery: its status, why it was
// ignored (Reason), and the event it logged (Event, nil when none).
type DeliveryOutcome struct {
	Status    string
	Reason    string
	Duplicate bool
	Event     *letagents.GitHubEvent
}

// githubEventColumns reads a github_events row aliased g as
// letagents.GitHubEvent's db tags name its fields.
const githubEventColumns = `g.id, g.room_id, g.delivery_id, g.event_type, g.action, coalesce(g.github_object_id, '') AS github_object_id,
	coalesce(g.github_object_url, '') AS github_object_url, coalesce(g.title, '') AS title, coalesce(g.state, '') AS state,
	coalesce(g.actor_login, '') AS actor_login, coalesce(g.branch, '') AS branch, g.metadata,
	coalesce(g.linked_task_id, '') AS linked_task_id, g.created_at`

// TakeGitHubDelivery processes a delivery exactly once, in one
// transaction: it records the delivery and, when ev is a change of an
// open repo room, logs it there (and in the room of its branch, when that
// is open), with a status line in each. A delivery already recorded
// processed or ignored is a Duplicate and changes nothing; a concurrent
// repeat waits for the first and is then one. When this fails nothing of
// it stays, so GitHub's redelivery is taken afresh (RecordFailedDelivery
// notes the failure meanwhile).
func (s *Store) TakeGitHubDelivery(ctx context.Context, d GitHubDelivery, ev *letagents.GitHubEvent) (DeliveryOutcome, error) {
	var out DeliveryOutcome
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		out = DeliveryOutcome{Status: DeliveryIgnored}
		var roomOpen bool
		switch {
		case ev == nil:
			out.Reason = "not an event this service follows"
		default:
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM rooms WHERE id = $1)`, ev.RoomID).Scan(&roomOpen); err != nil {
				return fmt.Errorf("find the repo room: %w", err)
			}
			if !roomOpen {
				out.Reason = "nobody opened the room " + ev.RoomID
			} else {
				out.Status = DeliveryProcessed
			}
		}
		tag, err := tx.Exec(ctx, `
			INSERT INTO github_deliveries AS d (delivery_id, event_name, action, room_id, status, reason, received_at, processed_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp())
			ON CONFLICT (delivery_id) DO UPDATE SET status = EXCLUDED.status, reason = EXCLUDED.reason,
				received_at = EXCLUDED.received_at, processed_at = EXCLUDED.processed_at
			WHERE d.status = 'failed'`,
			d.ID, d.EventName, nullString(d.Action), nullString(d.RoomID), out.Status, nullString(out.Reason), d.ReceivedAt)
		if err != nil {
			return fmt.Errorf("record delivery: %w", err)
		}
		if tag.RowsAffected() == 0 {
			out = DeliveryOutcome{Duplicate: true}
			return nil
		}
		if out.Status != DeliveryProcessed {
			return nil
		}
		logged, err := s.logGitHubEvent(ctx, tx, d.ID, *ev, d.ReceivedAt)
		if err != nil {
			return err
		}
		out.Event = &logged
		return nil
	})
	if err != nil {
		return DeliveryOutcome{}, err
	}
	if out.Duplicate {
		// What the first delivery became, for the answer.
		if err := s.queryRow(ctx, `SELECT status, coalesce(reason, '') FROM github_deliveries WHERE delivery_id = $1`, d.ID).
			Scan(&out.Status, &out.Reason); err != nil {
			return out, fmt.Errorf("read delivery: %w", err)
		}
	}
	return out, nil
}

// RecordFailedDelivery notes that a delivery failed and why, unless it
// was recorded otherwise meanwhile; a redelivery of it is taken again.
func (s *Store) RecordFailedDelivery(ctx context.Context, d GitHubDelivery, reason string) error {
	if _, err := s.pool.Exec(ctx, `
		INSERT INTO github_deliveries (delivery_id, event_name, action, room_id, status, reason, received_at, processed_at)
		VALUES ($1, $2, $3, $4, 'failed', $5, $6, clock_timestamp())
		ON CONFLICT (delivery_id) DO NOTHING`,
		d.ID, d.EventName, nullString(d.Action), nullString(d.RoomID), reason, d.ReceivedAt); err != nil {
		return fmt.Errorf("record failed delivery: %w", err)
	}
	return nil
}

// GitHubDeliveryStatus is a recorded delivery's status and reason;
// NotFound when none is recorded.
func (s *Store) GitHubDeliveryStatus(ctx context.Context, id string) (status, reason string, err error) {
	err = s.queryRow(ctx, `SELECT status, coalesce(reason, '') FROM github_deliveries WHERE delivery_id = $1`, id).Scan(&status, &reason)
	if isNoRows(err) {
		return "", "", letagents.Errorf(letagents.NotFound, "no delivery %s", id)
	}
	return status, reason, err
}

// logGitHubEvent adds ev to its repo room, which exists, inside tx: the
// row, its event and status line in the repo room, and the same in the
// room of its branch when that room is open. A comment, whose payload
// names no branch, takes its PR's branch from the PR's earlier events.
func (s *Store) logGitHubEvent(ctx context.Context, tx pgx.Tx, deliveryID string, ev letagents.GitHubEvent, now time.Time) (letagents.GitHubEvent, error) {
	if ev.Branch == "" && ev.EventType == letagents.GitHubIssueComment {
		if err := tx.QueryRow(ctx, `
			SELECT coalesce((SELECT branch FROM github_events WHERE room_id = $1 AND event_type IN ('pull_request', 'pull_request_review')
				AND github_object_id = $2 AND branch IS NOT NULL ORDER BY id DESC LIMIT 1), '')`,
			ev.RoomID, ev.ObjectID).Scan(&ev.Branch); err != nil {
			return ev, fmt.Errorf("find the pull request's branch: %w", err)
		}
	}
	line := ev.Line
	targets := []string{ev.RoomID}
	if ev.Branch != "" {
		if branchRoom, err := rooms.BranchRoomID(ev.RoomID, ev.Branch); err == nil {
			targets = append(targets, branchRoom)
		}
	}
	// Locks in the board's order: the task first, then the rooms, in
	// the order of their ids, which every delivery takes alike.
	link, err := s.findLinkedTask(ctx, tx, ev)
	if err != nil {
		return ev, err
	}
	var task letagents.Task
	if link.seq > 0 {
		if task, err = s.lockTask(ctx, tx, link.room, link.seq, now); err != nil {
			return ev, fmt.Errorf("lock the linked task: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, `SELECT FROM rooms WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`,
		append(slices.Clone(targets), link.room)); err != nil {
		return ev, fmt.Errorf("lock the rooms: %w", err)
	}
	if link.seq > 0 {
		ev.LinkedTask = task.ID()
		if err := s.followPullRequest(ctx, tx, task, ev, now); err != nil {
			return ev, err
		}
	}
	logged, err := queryOne[letagents.GitHubEvent](ctx, tx, `
		INSERT INTO github_events AS g (room_id, delivery_id, event_type, action, github_object_id, github_object_url, title, state,
			actor_login, branch, metadata, linked_task_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, date_trunc('milliseconds', clock_timestamp()))
		RETURNING `+githubEventColumns,
		ev.RoomID, deliveryID, ev.EventType, ev.Action, nullString(ev.ObjectID), nullString(ev.ObjectURL), nullString(ev.Title),
		nullString(ev.State), nullString(ev.Actor), nullString(ev.Branch), ev.Metadata, nullString(ev.LinkedTask))
	if err != nil {
		return ev, fmt.Errorf("log GitHub event: %w", err)
	}
	logged.Line = line
	if link.holder != "" && githubhook.Failing(ev.State) {
		// The lease holder hears of it by name, in its task's room.
		notice := fmt.Sprintf("@[%s] %s: your branch %s (%s).", link.holder, line, ev.Branch, letagents.TaskID(link.seq))
		if err := s.postLine(ctx, tx, link.room, notice); err != nil {
			return ev, err
		}
	}
	for _, room := range targets {
		// The branch room may not be open: no row, no event, no line.
		var open bool
		if err := tx.QueryRow(ctx, `
			WITH `+roomEvent{kind: letagents.EventGitHub, room: "$1", channel: "$2", ref: "$3::bigint"}.with()+`
			SELECT EXISTS (SELECT FROM next)`, room, s.RoomChannel(room), logged.ID).Scan(&open); err != nil {
			return ev, fmt.Errorf("log GitHub event in %s: %w", rooms.ForLog(room), err)
		}
		if !open {
			continue
		}
		m := letagents.SystemMessage(room, line)
		m.ClientMessageID = letagents.GitHubLineClientIDPrefix + strconv.FormatInt(logged.ID, 10)
		if _, err := s.sendMessage(ctx, tx, m); err != nil {
			return ev, fmt.Errorf("post the GitHub line: %w", err)
		}
	}
	return logged, nil
}

// GitHubEventQuery selects a page of a room's GitHub events, newest
// first: those before the event After (0: the newest), of EventType,
// about ObjectID, by Actor, logged in [Since, Until] (zero: unbounded).
type GitHubEventQuery struct {
	After                      int64
	EventType, ObjectID, Actor string
	Since, Until               time.Time
	Limit                      int
}

// GitHubEvents reads a page of the GitHub events of a repo room, newest
// first, and whether older ones follow. NotFound when the room does not
// exist.
func (s *Store) GitHubEvents(ctx context.Context, roomID string, q GitHubEventQuery) ([]letagents.GitHubEvent, bool, error) {
	if q.Limit < 1 {
		return nil, false, letagents.Errorf(letagents.Invalid, "limit must be at least 1")
	}
	type page struct {
		events []letagents.GitHubEvent
		more   bool
	}
	p, err := retried(ctx, s, func() (page, error) {
		var exists bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM rooms WHERE id = $1)`, roomID).Scan(&exists); err != nil {
			return page{}, fmt.Errorf("list GitHub events: %w", err)
		}
		if !exists {
			return page{}, letagents.RoomNotFound()
		}
		var since, until any
		if !q.Since.IsZero() {
			since = q.Since
		}
		if !q.Until.IsZero() {
			until = q.Until
		}
		evs, err := queryAll[letagents.GitHubEvent](ctx, s.pool, `
			SELECT `+githubEventColumns+` FROM github_events g
			WHERE g.room_id = $1 AND ($2 = 0 OR g.id < $2) AND ($3 = '' OR g.event_type = $3) AND ($4 = '' OR g.github_object_id = $4)
				AND ($5 = '' OR lower(g.actor_login) = lower($5))
				AND ($6::timestamptz IS NULL OR g.created_at >= $6) AND ($7::timestamptz IS NULL OR g.created_at <= $7)
			ORDER BY g.id DESC LIMIT $8`,
			roomID, q.After, q.EventType, q.ObjectID, q.Actor, since, until, q.Limit+1)
		if err != nil {
			return page{}, fmt.Errorf("list GitHub events: %w", err)
		}
		if len(evs) > q.Limit {
			return page{evs[:q.Limit], true}, nil
		}
		return page{evs, false}, nil
	})
	return p.events, p.more, err
}

// taskRef is how a pull request names a task: task_N in its branch,
// title or body, as the board names tasks.
var taskRef = regexp.MustCompile(`\btask_([1-9][0-9]{0,17})\b`)

// taskLink is the task a GitHub event is about: its room and number (0:
// none), and the actor label of its work lease's holder when the event's
// branch is that lease's ("" otherwise).
type taskLink struct {
	room   string
	seq    int64
	holder string
}

// findLinkedTask finds the task of a pull request's or a check's event:
// the task whose active work lease is on the event's branch, in the repo
// room or one of its branch rooms; else, for a pull request, the task it
// names (task_N), in the repo room or the room of its branch.
func (s *Store) findLinkedTask(ctx context.Context, tx pgx.Tx, ev letagents.GitHubEvent) (taskLink, error) {
	var link taskLink
	if ev.Branch == "" {
		return link, nil
	}
	err := tx.QueryRow(ctx, `
		SELECT l.room_id, l.task_seq, l.actor_label FROM task_leases l JOIN rooms r ON r.id = l.room_id
		WHERE (r.id = $1 OR r.parent_room_id = $1) AND l.kind = 'work' AND l.status = 'active' AND l.branch_ref = $2
			AND (l.expires_at IS NULL OR l.expires_at > now())
		ORDER BY l.created_at DESC LIMIT 1`, ev.RoomID, ev.Branch).Scan(&link.room, &link.seq, &link.holder)
	switch {
	case err == nil:
		return link, nil
	case !isNoRows(err):
		return link, fmt.Errorf("find the branch's lease: %w", err)
	}
	if ev.EventType != letagents.GitHubPullRequest {
		return link, nil
	}
	var body struct {
		Body string `json:"body"`
	}
	_ = json.Unmarshal(ev.Metadata, &body) // the parser wrote it; no body is no name
	var seqs []int64
	for _, m := range taskRef.FindAllStringSubmatch(ev.Branch+"\n"+ev.Title+"\n"+body.Body, -1) {
		if n, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			seqs = append(seqs, n)
		}
	}
	if len(seqs) == 0 {
		return link, nil
	}
	branchRoom, _ := rooms.BranchRoomID(ev.RoomID, ev.Branch)
	err = tx.QueryRow(ctx, `
		SELECT t.room_id, t.seq FROM tasks t WHERE t.room_id IN ($1, $2) AND t.seq = ANY($3)
		ORDER BY t.room_id = $1 DESC, array_position($3, t.seq) LIMIT 1`, ev.RoomID, branchRoom, seqs).Scan(&link.room, &link.seq)
	if err != nil && !isNoRows(err) {
		return link, fmt.Errorf("find the named task: %w", err)
	}
	return link, nil
}

// followPullRequest attaches a pull request to its task (the task's
// pr_url, so its workflow artefacts) and, when it merged, moves the task
// to merged where the board's rules allow it (a review lease by another
// agent than the worker); otherwise the status stays, and only the link
// is made. It acts as a room admin would: GitHub says what happened.
func (s *Store) followPullRequest(ctx context.Context, tx pgx.Tx, t letagents.Task, ev letagents.GitHubEvent, now time.Time) error {
	if ev.EventType != letagents.GitHubPullRequest || ev.ObjectURL == "" {
		return nil
	}
	c := letagents.TaskChange{Actor: letagents.Actor{Label: "GitHub", Admin: true}}
	if t.PRURL != ev.ObjectURL {
		c.PRURL = &ev.ObjectURL
	}
	if ev.State == "merged" && t.Status != letagents.TaskMerged && t.Status.Open() {
		c.Status = letagents.TaskMerged
	}
	u, err := letagents.DecideTaskUpdate(t, c)
	if err != nil && c.Status != "" {
		c.Status = "" // the board does not allow it: only link
		u, err = letagents.DecideTaskUpdate(t, c)
	}
	if err != nil || (c.PRURL == nil && !u.Moved) {
		return nil // nothing the board takes, or nothing to change
	}
	if _, err := s.writeTaskUpdate(ctx, tx, t, u, now); err != nil {
		return fmt.Errorf("link the pull request to %s: %w", t.ID(), err)
	}
	return nil
}
