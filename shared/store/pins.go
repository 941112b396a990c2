package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// PinMessage pins (pin) or unpins a message of a room as by (a room
// admin's login) at now, and logs the change as a pin event, in one
// statement; it answers the message as reads give it. Pinning a pinned
// message keeps its first pin. NotFound when the room or the message does
// not exist (a prompt-only message, which reads leave out, included);
// Conflict when pinning one more would pass letagents.MaxPins.
func (s *Store) PinMessage(ctx context.Context, roomID string, seq int64, by string, pin bool, now time.Time) (letagents.Message, error) {
	var at, who any
	if pin {
		at, who = now, by
	}
	_, err := queryOne[struct {
		Seq int64 `db:"seq"`
	}](ctx, s.pool, `
		WITH `+roomEvent{kind: letagents.EventPin, room: "$1", channel: "$5", ref: "$2::bigint", where: pinnable}.with()+`
		UPDATE messages SET pinned_at = CASE WHEN pinned_at IS NULL OR $3::timestamptz IS NULL THEN $3 ELSE pinned_at END,
			pinned_by = CASE WHEN pinned_at IS NULL OR $3::timestamptz IS NULL THEN $4 ELSE pinned_by END
		FROM next WHERE messages.room_id = $1 AND messages.seq = $2
		RETURNING messages.seq`, roomID, seq, at, who, s.RoomChannel(roomID), letagents.MaxPins)
	switch {
	case isNoRows(err):
		found, err := s.messagesWhere(ctx, roomID, `m.seq = $2`, "", seq)
		switch {
		case err != nil:
			return letagents.Message{}, fmt.Errorf("pin message: %w", err)
		case len(found) == 0:
			if _, err := s.Room(ctx, roomID); err != nil {
				return letagents.Message{}, err
			}
			return letagents.Message{}, letagents.Errorf(letagents.NotFound, "Message not found")
		}
		return letagents.Message{}, letagents.Errorf(letagents.Conflict, "this room already has %d pinned messages, the most it holds: unpin one first", letagents.MaxPins)
	case err != nil:
		return letagents.Message{}, fmt.Errorf("pin message: %w", err)
	}
	msgs, err := s.messagesWhere(ctx, roomID, `m.seq = $2`, "", seq)
	if err != nil || len(msgs) != 1 {
		return letagents.Message{}, fmt.Errorf("read pinned message: %w (%d found)", err, len(msgs))
	}
	return msgs[0], nil
}

// pinnable is the condition, on a pin's room row, that the message ($2)
// is one reads give and that the room has room for its pin: an unpin
// ($3 null) or a message pinned already, or fewer pins than $6.
const pinnable = ` AND EXISTS (SELECT FROM messages WHERE room_id = $1 AND seq = $2 AND ` + visible + `)
	AND ($3::timestamptz IS NULL OR EXISTS (SELECT FROM messages WHERE room_id = $1 AND seq = $2 AND pinned_at IS NOT NULL)
		OR (SELECT count(*) FROM messages WHERE room_id = $1 AND pinned_at IS NOT NULL) < $6)`

// Pins lists a room's pinned messages, the most recently pinned first, as
// reads give them: at most letagents.MaxPins, as a room holds no more.
// NotFound when the room does not exist.
func (s *Store) Pins(ctx context.Context, roomID string) ([]letagents.Message, error) {
	msgs, err := s.messagesWhere(ctx, roomID, `m.pinned_at IS NOT NULL`, `m.pinned_at DESC, m.seq DESC`)
	if err != nil {
		return nil, fmt.Errorf("list pins: %w", err)
	}
	if len(msgs) == 0 {
		if _, err := s.Room(ctx, roomID); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// messagesWhere reads the visible messages m of a room ($1) that cond
// (SQL over m; args are $2 on) selects, as reads give them, in order (SQL
// over m; "" for by number), at most letagents.MaxPageSize.
func (s *Store) messagesWhere(ctx context.Context, roomID, cond, order string, args ...any) ([]letagents.Message, error) {
	if order == "" {
		order = "m.seq"
	}
	return retried(ctx, s, func() ([]letagents.Message, error) {
		rows, err := queryAll[messageRow](ctx, s.pool, `SELECT `+messageSelect+`
			FROM (SELECT * FROM messages m WHERE m.room_id = $1 AND `+visible+` AND `+cond+`
				ORDER BY `+order+` LIMIT `+strconv.Itoa(letagents.MaxPageSize)+`) m `+messageJoins+`
			ORDER BY `+order, append([]any{roomID}, args...)...)
		if err != nil {
			return nil, err
		}
		out := make([]letagents.Message, len(rows))
		for i := range rows {
			out[i], _ = rows[i].message()
		}
		return out, nil
	})
}
