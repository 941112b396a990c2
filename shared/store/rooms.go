package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
)

// roomColumns reads a rooms row as letagents.Room's db tags name its
// fields.
const roomColumns = `id, kind, display_name, coalesce(parent_room_id, '') AS parent_room_id, last_seq, created_at`

// CreateInviteRoom creates an ad-hoc room named by a fresh invite code.
// A signed-in creator (creatorID > 0) becomes its admin in the same
// transaction.
func (s *Store) CreateInviteRoom(ctx context.Context, creatorID int64) (letagents.Room, error) {
	var r letagents.Room
	err := s.withTx(ctx, func(tx pgx.Tx) (err error) {
		r, err = insertInviteRoom(ctx, tx, func(code string) (letagents.Room, error) {
			return queryOne[letagents.Room](ctx, tx, `INSERT INTO rooms (id, kind, display_name) VALUES ($1, $2, $3) RETURNING `+roomColumns,
				code, letagents.RoomInvite, rooms.DisplayName(code))
		})
		if err != nil {
			return fmt.Errorf("create invite room: %w", err)
		}
		if creatorID > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO room_admins (room_id, account_id) VALUES ($1, $2)`, r.ID, creatorID); err != nil {
				return fmt.Errorf("create invite room: add admin: %w", err)
			}
		}
		return nil
	})
	return r, err
}

// RotateInviteCode gives an invite room a fresh code: its id changes, and
// its messages and admins follow (ON UPDATE CASCADE). The old code stops
// working at once, for connections already open with it too
// (RoomAccessChannel). The room keeps its display name, which its people know
// it by. Invalid for any other kind of room.
func (s *Store) RotateInviteCode(ctx context.Context, id string) (letagents.Room, error) {
	var r letagents.Room
	err := s.withTx(ctx, func(tx pgx.Tx) (err error) {
		r, err = queryOne[letagents.Room](ctx, tx, `SELECT `+roomColumns+` FROM rooms WHERE id = $1 FOR UPDATE`, id)
		switch {
		case isNoRows(err):
			return letagents.RoomNotFound()
		case err != nil:
			return fmt.Errorf("rotate invite code: %w", err)
		case r.Kind != letagents.RoomInvite:
			return letagents.Errorf(letagents.Invalid, "Only invite rooms have a code to rotate")
		}
		r, err = insertInviteRoom(ctx, tx, func(code string) (letagents.Room, error) {
			return queryOne[letagents.Room](ctx, tx, `UPDATE rooms SET id = $2 WHERE id = $1 RETURNING `+roomColumns, id, code)
		})
		if err != nil {
			return fmt.Errorf("rotate invite code: %w", err)
		}
		return ringAccess(ctx, tx, s.RoomAccessChannel(id))
	})
	return r, err
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
		var r letagents.Room
		err = savepoint(ctx, tx, func(pgx.Tx) (err error) {
			r, err = write(code)
			return err
		})
		if pgCode(err) == uniqueViolation {
			continue
		}
		if err != nil {
			return letagents.Room{}, err
		}
		return r, nil
	}
	return letagents.Room{}, errors.New("no free code after 5 tries")
}

// Room returns the room with a canonical id.
func (s *Store) Room(ctx context.Context, id string) (letagents.Room, error) {
	r, err := retried(ctx, s, func() (letagents.Room, error) {
		return queryOne[letagents.Room](ctx, s.pool, `SELECT `+roomColumns+` FROM rooms WHERE id = $1`, id)
	})
	if isNoRows(err) {
		return r, letagents.RoomNotFound()
	}
	if err != nil {
		return r, fmt.Errorf("read room: %w", err)
	}
	return r, nil
}

// RoomID resolves a canonical room id to the id of the room it names;
// invite says that is an invite room (which exists). Only an invite-shaped
// id needs resolving: it names the invite room of that code when there is
// one, else, when rooms.MayBeNamed, the named room rooms.NamedRoomOf gives
// (which need not exist yet), so that names such as team-chat can be rooms
// too; else the code itself, which no room has.
func (s *Store) RoomID(ctx context.Context, id string) (resolved string, invite bool, err error) {
	if !rooms.IsInviteCode(id) {
		return id, false, nil
	}
	err = s.retry(ctx, func() error {
		r, found, err := inviteOrNamed(ctx, s.pool, id)
		resolved, invite = r.ID, found && r.Kind == letagents.RoomInvite
		return err
	})
	return resolved, invite, err
}

// inviteOrNamed reads the room an invite-shaped id names (RoomID). When
// none exists, found is false and the room has only the id the named room
// would have, or the code when the id cannot name one.
func inviteOrNamed(ctx context.Context, q querier, id string) (r letagents.Room, found bool, err error) {
	code, name := strings.ToUpper(id), rooms.NamedRoomOf(id)
	if !rooms.MayBeNamed(id) {
		name = code
	}
	r, err = queryOne[letagents.Room](ctx, q, `
		SELECT `+roomColumns+` FROM rooms WHERE (id = $1 AND kind = $3) OR id = $2
		ORDER BY kind = $3 DESC LIMIT 1`, code, name, letagents.RoomInvite)
	switch {
	case isNoRows(err):
		return letagents.Room{ID: name}, false, nil
	case err != nil:
		return r, false, fmt.Errorf("resolve room id %s: %w", id, err)
	}
	return r, true, nil
}

// EnsureRoom returns the room with a canonical id, creating it (and, for a
// branch room, its repo room) if it does not exist yet. Invite rooms are
// never created here: their codes are only ever minted by CreateInviteRoom,
// so an invite-shaped id that no invite room has opens the named room of
// that name when it may name one (RoomID), else is not found.
func (s *Store) EnsureRoom(ctx context.Context, id string) (room letagents.Room, created bool, err error) {
	kind := rooms.KindOf(id)
	err = s.withTx(ctx, func(tx pgx.Tx) (err error) {
		if kind == letagents.RoomInvite {
			r, found, err := inviteOrNamed(ctx, tx, id)
			if err != nil || found {
				room = r
				return err
			}
			if !rooms.MayBeNamed(id) {
				return letagents.RoomNotFound()
			}
			id, kind = r.ID, letagents.RoomNamed
		}
		parent := ""
		if locator, _, ok := rooms.ParseBranchRoom(id); ok {
			if _, _, err := ensureRoom(ctx, tx, locator, letagents.RoomRepo, ""); err != nil {
				return err
			}
			parent = locator
		}
		room, created, err = ensureRoom(ctx, tx, id, kind, parent)
		return err
	})
	if err != nil {
		return room, false, err
	}
	return room, created, nil
}

func ensureRoom(ctx context.Context, tx pgx.Tx, id string, kind letagents.RoomKind, parent string) (letagents.Room, bool, error) {
	var parentArg any
	if parent != "" {
		parentArg = parent
	}
	r, err := queryOne[letagents.Room](ctx, tx, `INSERT INTO rooms (id, kind, display_name, parent_room_id) VALUES ($1, $2, $3, $4)
		 ON CONFLICT (id) DO NOTHING RETURNING `+roomColumns,
		id, kind, rooms.DisplayName(id), parentArg)
	if err == nil {
		return r, true, nil
	}
	if !isNoRows(err) {
		return r, false, fmt.Errorf("ensure room %s: %w", id, err)
	}
	r, err = queryOne[letagents.Room](ctx, tx, `SELECT `+roomColumns+` FROM rooms WHERE id = $1`, id)
	if err != nil {
		return r, false, fmt.Errorf("ensure room %s: read: %w", id, err)
	}
	return r, false, nil
}

// RenameRoom sets a room's display name and logs the change as a room
// event, in one statement.
func (s *Store) RenameRoom(ctx context.Context, id, displayName string) (letagents.Room, error) {
	r, err := queryOne[letagents.Room](ctx, s.pool, `
		WITH `+roomEvent{kind: letagents.EventRoom, room: "$1", channel: "$3", set: ", display_name = $2"}.with()+`
		SELECT `+roomColumns+` FROM next`, id, displayName, s.RoomChannel(id))
	switch {
	case isNoRows(err):
		return r, letagents.RoomNotFound()
	case err != nil:
		return r, fmt.Errorf("rename room: %w", err)
	}
	return r, nil
}

// RoomsOf lists, oldest first, the rooms an account is known in other than
// invite rooms (whose ids are their secret codes): those it administers
// and those its agents have had sessions in.
func (s *Store) RoomsOf(ctx context.Context, accountID int64) ([]letagents.Room, error) {
	return retried(ctx, s, func() ([]letagents.Room, error) {
		out, err := queryAll[letagents.Room](ctx, s.pool, `
			SELECT `+roomColumns+` FROM rooms
			WHERE kind <> $2 AND id IN (
				SELECT room_id FROM room_admins WHERE account_id = $1
				UNION SELECT room_id FROM agent_sessions WHERE owner_account_id = $1)
			ORDER BY created_at, id`, accountID, letagents.RoomInvite)
		if err != nil {
			return nil, fmt.Errorf("list rooms of account: %w", err)
		}
		return out, nil
	})
}
