package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

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
		logged, err := s.logGitHubEvent(ctx, tx, d.ID, *ev)
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
func (s *Store) logGitHubEvent(ctx context.Context, tx pgx.Tx, deliveryID string, ev letagents.GitHubEvent) (letagents.GitHubEvent, error) {
	if ev.Branch == "" && ev.EventType == letagents.GitHubIssueComment {
		if err := tx.QueryRow(ctx, `
			SELECT coalesce((SELECT branch FROM github_events WHERE room_id = $1 AND event_type IN ('pull_request', 'pull_request_review')
				AND github_object_id = $2 AND branch IS NOT NULL ORDER BY id DESC LIMIT 1), '')`,
			ev.RoomID, ev.ObjectID).Scan(&ev.Branch); err != nil {
			return ev, fmt.Errorf("find the pull request's branch: %w", err)
		}
	}
	line := ev.Line
	logged, err := queryOne[letagents.GitHubEvent](ctx, tx, `
		INSERT INTO github_events AS g (room_id, delivery_id, event_type, action, github_object_id, github_object_url, title, state,
			actor_login, branch, metadata, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, date_trunc('milliseconds', clock_timestamp()))
		RETURNING `+githubEventColumns,
		ev.RoomID, deliveryID, ev.EventType, ev.Action, nullString(ev.ObjectID), nullString(ev.ObjectURL), nullString(ev.Title),
		nullString(ev.State), nullString(ev.Actor), nullString(ev.Branch), ev.Metadata)
	if err != nil {
		return ev, fmt.Errorf("log GitHub event: %w", err)
	}
	logged.Line = line
	targets := []string{ev.RoomID}
	if ev.Branch != "" {
		if branchRoom, err := rooms.BranchRoomID(ev.RoomID, ev.Branch); err == nil {
			targets = append(targets, branchRoom)
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
		if err := s.postLine(ctx, tx, room, line); err != nil {
			return ev, err
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
