package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
)

const roomColumns = `id, kind, display_name, coalesce(parent_room_id, ''), last_seq, created_at`

func scanRoom(row pgx.Row) (letagents.Room, error) {
	var r letagents.Room
	err := row.Scan(&r.ID, &r.Kind, &r.DisplayName, &r.ParentID, &r.LastSeq, &r.CreatedAt)
	return r, err
}

// CreateInviteRoom creates an ad-hoc room named by a fresh invite code.
// A signed-in creator (creatorID > 0) becomes its admin in the same
// transaction.
func (s *Store) CreateInviteRoom(ctx context.Context, creatorID int64) (letagents.Room, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return letagents.Room{}, fmt.Errorf("create invite room: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	r, err := insertInviteRoom(ctx, tx, func(code string) (letagents.Room, error) {
		return scanRoom(tx.QueryRow(ctx,
			`INSERT INTO rooms (id, kind, display_name) VALUES ($1, $2, $3) RETURNING `+roomColumns,
			code, letagents.RoomInvite, rooms.DisplayName(code)))
	})
	if err != nil {
		return r, fmt.Errorf("create invite room: %w", err)
	}
	if creatorID > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO room_admins (room_id, account_id) VALUES ($1, $2)`, r.ID, creatorID); err != nil {
			return r, fmt.Errorf("create invite room: add admin: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return r, fmt.Errorf("create invite room: commit: %w", err)
	}
	return r, nil
}

// RotateInviteCode gives an invite room a fresh code: its id changes, and
// its messages and admins follow (ON UPDATE CASCADE). The old code stops
// working at once. The room keeps its display name, which its people know
// it by. Invalid for any other kind of room.
func (s *Store) RotateInviteCode(ctx context.Context, id string) (letagents.Room, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return letagents.Room{}, fmt.Errorf("rotate invite code: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	room, err := scanRoom(tx.QueryRow(ctx, `SELECT `+roomColumns+` FROM rooms WHERE id = $1 FOR UPDATE`, id))
	switch {
	case isNoRows(err):
		return room, letagents.Errorf(letagents.NotFound, "Room not found")
	case err != nil:
		return room, fmt.Errorf("rotate invite code: %w", err)
	case room.Kind != letagents.RoomInvite:
		return room, letagents.Errorf(letagents.Invalid, "Only invite rooms have a code to rotate")
	}
	r, err := insertInviteRoom(ctx, tx, func(code string) (letagents.Room, error) {
		return scanRoom(tx.QueryRow(ctx, `UPDATE rooms SET id = $2 WHERE id = $1 RETURNING `+roomColumns, id, code))
	})
	if err != nil {
		return r, fmt.Errorf("rotate invite code: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return r, fmt.Errorf("rotate invite code: commit: %w", err)
	}
	return r, nil
}

// insertInviteRoom runs write with fresh codes until one is free. 36^12
// codes make a collision all but impossible; retrying a few times turns
// "all but" into "never" without looping forever on a broken table. Each
// try runs under a savepoint, since a unique violation aborts the
// transaction around it.
func insertInviteRoom(ctx context.Context, tx pgx.Tx, write func(code string) (letagents.Room, error)) (letagents.Room, error) {
	for range 5 {
		code, err := rooms.NewInviteCode()
		if err != nil {
			return letagents.Room{}, err
		}
		sp, err := tx.Begin(ctx)
		if err != nil {
			return letagents.Room{}, err
		}
		r, err := write(code)
		if pgCode(err) == uniqueViolation {
			if rerr := sp.Rollback(ctx); rerr != nil {
				return letagents.Room{}, rerr
			}
			continue
		}
		if err != nil {
			return letagents.Room{}, err
		}
		if err := sp.Commit(ctx); err != nil {
			return letagents.Room{}, err
		}
		return r, nil
	}
	return letagents.Room{}, errors.New("no free code after 5 tries")
}

// Room returns the room with a canonical id.
func (s *Store) Room(ctx context.Context, id string) (letagents.Room, error) {
	r, err := scanRoom(s.queryRow(ctx, `SELECT `+roomColumns+` FROM rooms WHERE id = $1`, id))
	if isNoRows(err) {
		return r, letagents.Errorf(letagents.NotFound, "Room not found")
	}
	if err != nil {
		return r, fmt.Errorf("read room: %w", err)
	}
	return r, nil
}

// EnsureRoom returns the room with a canonical id, creating it (and, for a
// branch room, its repo room) if it does not exist yet. Invite rooms are
// never created here: their codes are only ever minted by CreateInviteRoom.
func (s *Store) EnsureRoom(ctx context.Context, id string) (room letagents.Room, created bool, err error) {
	kind := rooms.KindOf(id)
	if kind == rooms.KindInvite {
		r, err := s.Room(ctx, id)
		return r, false, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return room, false, fmt.Errorf("ensure room: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit

	parent := ""
	if locator, _, ok := rooms.ParseBranchRoom(id); ok {
		if _, _, err := ensureRoom(ctx, tx, locator, letagents.RoomRepo, ""); err != nil {
			return room, false, err
		}
		parent = locator
	}
	// rooms.Kind names its kinds as the rooms table stores them (the
	// table's CHECK and TestEnsureRoom hold the two together).
	room, created, err = ensureRoom(ctx, tx, id, letagents.RoomKind(kind.String()), parent)
	if err != nil {
		return room, false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return room, false, fmt.Errorf("ensure room: commit: %w", err)
	}
	return room, created, nil
}

func ensureRoom(ctx context.Context, tx pgx.Tx, id string, kind letagents.RoomKind, parent string) (letagents.Room, bool, error) {
	var parentArg any
	if parent != "" {
		parentArg = parent
	}
	r, err := scanRoom(tx.QueryRow(ctx,
		`INSERT INTO rooms (id, kind, display_name, parent_room_id) VALUES ($1, $2, $3, $4)
		 ON CONFLICT (id) DO NOTHING RETURNING `+roomColumns,
		id, kind, rooms.DisplayName(id), parentArg))
	if err == nil {
		return r, true, nil
	}
	if !isNoRows(err) {
		return r, false, fmt.Errorf("ensure room %s: %w", id, err)
	}
	r, err = scanRoom(tx.QueryRow(ctx, `SELECT `+roomColumns+` FROM rooms WHERE id = $1`, id))
	if err != nil {
		return r, false, fmt.Errorf("ensure room %s: read: %w", id, err)
	}
	return r, false, nil
}
