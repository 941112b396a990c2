package store

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// SendMessage appends a message to its room and rings the room's channel.
//
// One statement does it all, so a send is one round trip: bumping the
// room's last_seq takes the next gap-free number under that row's lock, the
// insert and the NOTIFY commit with it (NOTIFY is delivered only on commit,
// so a woken reader always finds the row).
func (s *Store) SendMessage(ctx context.Context, m letagents.NewMessage) (letagents.Message, error) {
	if err := m.Validate(); err != nil {
		return letagents.Message{}, err
	}
	var source, parent any
	if m.Source != "" {
		source = m.Source
	}
	if m.ThreadParentSeq > 0 {
		parent = m.ThreadParentSeq
	}
	out := letagents.Message{RoomID: m.RoomID, Sender: m.Sender, Text: m.Text, Source: m.Source, ThreadParentSeq: m.ThreadParentSeq}
	err := s.pool.QueryRow(ctx, `
		WITH next AS (
			UPDATE rooms SET last_seq = last_seq + 1 WHERE id = $1 RETURNING id, last_seq
		), ins AS (
			INSERT INTO messages (room_id, seq, sender, text, source, thread_parent_seq, created_at)
			SELECT id, last_seq, $2, $3, $4, $5, date_trunc('milliseconds', clock_timestamp()) FROM next
			RETURNING seq, created_at
		)
		SELECT seq, created_at, pg_notify($6, seq::text) FROM ins`,
		m.RoomID, m.Sender, m.Text, source, parent, s.Channel(m.RoomID),
	).Scan(&out.Seq, &out.CreatedAt, nil)
	switch {
	case isNoRows(err):
		return out, letagents.Errorf(letagents.NotFound, "Room not found")
	case pgCode(err) == foreignKeyViolation, pgCode(err) == checkViolation:
		return out, letagents.Errorf(letagents.Invalid, "thread_parent_id %s is not a message in this room", letagents.MessageID(m.ThreadParentSeq))
	case err != nil:
		return out, fmt.Errorf("send message: %w", err)
	}
	return out, nil
}

// BeforeLatest as MessageQuery.Before asks for the newest page.
const BeforeLatest = math.MaxInt64

// MessageQuery selects a page of a room's timeline: the Limit messages
// after After, or, when Before is set, the Limit messages just before it.
type MessageQuery struct {
	After  int64
	Before int64 // 0: read forward from After; BeforeLatest: the newest page
	Limit  int
}

// Messages reads one page of a room's timeline, oldest first, in one round
// trip that also tells a missing room from an empty one.
func (s *Store) Messages(ctx context.Context, roomID string, q MessageQuery) (letagents.MessagePage, error) {
	var page letagents.MessagePage
	if q.Limit < 1 || q.Limit > letagents.MaxPageSize {
		return page, letagents.Errorf(letagents.Invalid, "limit must be between 1 and %d", letagents.MaxPageSize)
	}
	inner := `SELECT seq, sender, text, source, thread_parent_seq, created_at FROM messages
		WHERE room_id = r.id AND seq > $2 ORDER BY seq LIMIT $3`
	bound := q.After
	if q.Before > 0 {
		inner = `SELECT seq, sender, text, source, thread_parent_seq, created_at FROM messages
			WHERE room_id = r.id AND seq < $2 ORDER BY seq DESC LIMIT $3`
		bound = q.Before
	}
	rows, err := s.pool.Query(ctx, `
		SELECT r.last_seq, m.seq, m.sender, m.text, m.source, m.thread_parent_seq, m.created_at
		FROM rooms r LEFT JOIN LATERAL (`+inner+`) m ON true
		WHERE r.id = $1`, roomID, bound, q.Limit)
	if err != nil {
		return page, fmt.Errorf("read messages: %w", err)
	}
	defer rows.Close()
	found := false
	for rows.Next() {
		found = true
		var (
			seq, parent  *int64
			sender, text *string
			source       *string
			createdAt    *time.Time
		)
		if err := rows.Scan(&page.LastSeq, &seq, &sender, &text, &source, &parent, &createdAt); err != nil {
			return page, fmt.Errorf("read messages: %w", err)
		}
		if seq == nil {
			continue // the room exists and the page is empty
		}
		m := letagents.Message{RoomID: roomID, Seq: *seq, Sender: *sender, Text: *text, CreatedAt: *createdAt}
		if source != nil {
			m.Source = *source
		}
		if parent != nil {
			m.ThreadParentSeq = *parent
		}
		page.Messages = append(page.Messages, m)
	}
	if err := rows.Err(); err != nil {
		return page, fmt.Errorf("read messages: %w", err)
	}
	if !found {
		return page, letagents.Errorf(letagents.NotFound, "Room not found")
	}
	if q.Before > 0 {
		slices.Reverse(page.Messages)
	}
	// Numbers are gap-free and last_seq was read in the same snapshot, so
	// the page's ends say exactly whether anything lies beyond them.
	if n := len(page.Messages); n > 0 {
		page.HasMore = page.Messages[n-1].Seq < page.LastSeq
		page.HasOlder = page.Messages[0].Seq > 1
	}
	return page, nil
}
