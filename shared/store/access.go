package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// IsRoomAdmin reports whether an account administers a room, whatever
// made it an admin. Rooms whose admins GitHub decides ask SyncGitHubAdmin.
func (s *Store) IsRoomAdmin(ctx context.Context, roomID string, accountID int64) (bool, error) {
	var ok bool
	err := s.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM room_admins WHERE room_id = $1 AND account_id = $2)`,
		roomID, accountID).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("read room admin: %w", err)
	}
	return ok, nil
}

// IsRoomGrantedAdmin reports whether an account administers a room by a
// grant of the room itself, leaving out what GitHub once said.
func (s *Store) IsRoomGrantedAdmin(ctx context.Context, roomID string, accountID int64) (bool, error) {
	var ok bool
	err := s.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM room_admins WHERE room_id = $1 AND account_id = $2 AND source = 'room')`,
		roomID, accountID).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("read room admin: %w", err)
	}
	return ok, nil
}

// AddRoomAdmin makes an account an admin of a room by a grant of the room
// itself (idempotent; a GitHub-derived admin becomes a granted one).
func (s *Store) AddRoomAdmin(ctx context.Context, roomID string, accountID int64) error {
	if _, err := s.pool.Exec(ctx, `
		INSERT INTO room_admins (room_id, account_id, source) VALUES ($1, $2, 'room')
		ON CONFLICT (room_id, account_id) DO UPDATE SET source = 'room'`,
		roomID, accountID); err != nil {
		return fmt.Errorf("add room admin: %w", err)
	}
	return nil
}

// SyncGitHubAdmin keeps an account's GitHub-derived admin row of a room
// in step with what GitHub now says of its admin rights on the room's
// repository (githubAdmin), and reports whether the account administers
// the room afterwards. A join (join) records the rights GitHub gives;
// any other look removes those GitHub no longer gives, and adds none, so
// that reading a room records nothing new. A grant of the room itself is
// neither replaced nor removed by GitHub's word, and counts whatever it
// says. One round trip.
func (s *Store) SyncGitHubAdmin(ctx context.Context, roomID string, accountID int64, githubAdmin, join bool) (bool, error) {
	var granted, derived bool
	// The statement's parts see one snapshot, taken before either writes:
	// the final SELECT reads the rows as they were.
	err := s.queryRow(ctx, `
		WITH gone AS (
			DELETE FROM room_admins WHERE room_id = $1 AND account_id = $2 AND source = 'github' AND NOT $3
		), added AS (
			INSERT INTO room_admins (room_id, account_id, source) SELECT $1, $2, 'github' WHERE $3 AND $4
			ON CONFLICT (room_id, account_id) DO NOTHING
		)
		SELECT EXISTS (SELECT 1 FROM room_admins WHERE room_id = $1 AND account_id = $2 AND source = 'room'),
			EXISTS (SELECT 1 FROM room_admins WHERE room_id = $1 AND account_id = $2 AND source = 'github')`,
		roomID, accountID, githubAdmin, join).Scan(&granted, &derived)
	if err != nil {
		return false, fmt.Errorf("sync GitHub room admin: %w", err)
	}
	return granted || githubAdmin && (join || derived), nil
}

// ClaimFirstAdmin makes an account admin of a room that has no admin yet
// and reports whether the account is an admin afterwards. The room row's
// lock makes two first joiners take turns, so only one becomes admin.
func (s *Store) ClaimFirstAdmin(ctx context.Context, roomID string, accountID int64) (bool, error) {
	var admin bool
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM rooms WHERE id = $1 FOR UPDATE`, roomID); err != nil {
			return fmt.Errorf("claim first admin: lock room: %w", err)
		}
		err := tx.QueryRow(ctx, `
			WITH ins AS (
				INSERT INTO room_admins (room_id, account_id)
				SELECT $1, $2 WHERE NOT EXISTS (SELECT 1 FROM room_admins WHERE room_id = $1)
				RETURNING account_id
			)
			SELECT EXISTS (SELECT 1 FROM ins) OR EXISTS (SELECT 1 FROM room_admins WHERE room_id = $1 AND account_id = $2)`,
			roomID, accountID).Scan(&admin)
		if err != nil {
			return fmt.Errorf("claim first admin: %w", err)
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return admin, nil
}

// repoVisibilitySQL reads what GitHub said of a repository ($1) as
// repoVisibilityRow names it.
const repoVisibilitySQL = `SELECT public, checked_at FROM github_repo_visibility WHERE repo = $1`

type repoVisibilityRow struct {
	Public    bool      `db:"public"`
	CheckedAt time.Time `db:"checked_at"`
}

// RepoVisibility returns what GitHub last said about a repository's
// visibility and when; found is false if it never did.
func (s *Store) RepoVisibility(ctx context.Context, repo string) (public bool, checkedAt time.Time, found bool, err error) {
	row, err := retried(ctx, s, func() (repoVisibilityRow, error) {
		return queryOne[repoVisibilityRow](ctx, s.pool, repoVisibilitySQL, repo)
	})
	switch {
	case isNoRows(err):
		return false, checkedAt, false, nil
	case err != nil:
		return false, checkedAt, false, fmt.Errorf("read repo visibility: %w", err)
	}
	return row.Public, row.CheckedAt, true, nil
}

// SaveRepoVisibility remembers what GitHub said about a repository.
func (s *Store) SaveRepoVisibility(ctx context.Context, repo string, public bool, now time.Time) error {
	if _, err := s.pool.Exec(ctx, `
		INSERT INTO github_repo_visibility (repo, public, checked_at) VALUES ($1, $2, $3)
		ON CONFLICT (repo) DO UPDATE SET public = EXCLUDED.public, checked_at = EXCLUDED.checked_at`,
		repo, public, now); err != nil {
		return fmt.Errorf("save repo visibility: %w", err)
	}
	return nil
}

// RepoAccess is what GitHub said about one account and one repository.
// Its db tags name the columns the store reads it from.
type RepoAccess struct {
	Allowed bool `db:"allowed"` // the account can see the repository
	Admin   bool `db:"admin"`   // and administers it
}

// repoAccessSQL reads what GitHub said of an account ($1) and a
// repository ($2) as repoAccessRow names it.
const repoAccessSQL = `SELECT allowed, admin, checked_at FROM github_repo_access WHERE account_id = $1 AND repo = $2`

type repoAccessRow struct {
	RepoAccess
	CheckedAt time.Time `db:"checked_at"`
}

// CachedRepoAccess returns the access GitHub last reported for an account
// and a repository and when; found is false if it never did.
func (s *Store) CachedRepoAccess(ctx context.Context, accountID int64, repo string) (a RepoAccess, checkedAt time.Time, found bool, err error) {
	row, err := retried(ctx, s, func() (repoAccessRow, error) {
		return queryOne[repoAccessRow](ctx, s.pool, repoAccessSQL, accountID, repo)
	})
	switch {
	case isNoRows(err):
		return a, checkedAt, false, nil
	case err != nil:
		return a, checkedAt, false, fmt.Errorf("read repo access: %w", err)
	}
	return row.RepoAccess, row.CheckedAt, true, nil
}

// SaveRepoAccess remembers what GitHub said about an account and a repository.
func (s *Store) SaveRepoAccess(ctx context.Context, accountID int64, repo string, a RepoAccess, now time.Time) error {
	if _, err := s.pool.Exec(ctx, `
		INSERT INTO github_repo_access (account_id, repo, allowed, admin, checked_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (account_id, repo) DO UPDATE
		SET allowed = EXCLUDED.allowed, admin = EXCLUDED.admin, checked_at = EXCLUDED.checked_at`,
		accountID, repo, a.Allowed, a.Admin, now); err != nil {
		return fmt.Errorf("save repo access: %w", err)
	}
	return nil
}

// ringAccess rings access channels (AccountAccessChannel and the like)
// when tx commits, so the connections the change concerns check again.
func ringAccess(ctx context.Context, tx pgx.Tx, channels ...string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_notify(c, '') FROM unnest($1::text[]) c`, channels); err != nil {
		return fmt.Errorf("ring access channels: %w", err)
	}
	return nil
}

// InvalidateRepoAccess forgets what GitHub said about who may see repo
// ("owner/name") and tells the open connections it concerns to check
// again, at once, rather than when the cached answer ages: the hook for
// whatever learns of a change on GitHub's side (a webhook). With
// accountID > 0 only that account's answer is forgotten and only its
// connections check; with 0, every account's answer and the
// repository's visibility are, and every connection to its rooms checks.
func (s *Store) InvalidateRepoAccess(ctx context.Context, repo string, accountID int64) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		if accountID > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM github_repo_access WHERE account_id = $1 AND repo = lower($2)`, accountID, repo); err != nil {
				return fmt.Errorf("invalidate repo access: %w", err)
			}
			return ringAccess(ctx, tx, s.AccountAccessChannel(accountID))
		}
		if _, err := tx.Exec(ctx, `DELETE FROM github_repo_access WHERE repo = lower($1)`, repo); err != nil {
			return fmt.Errorf("invalidate repo access: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM github_repo_visibility WHERE repo = lower($1)`, repo); err != nil {
			return fmt.Errorf("invalidate repo visibility: %w", err)
		}
		return ringAccess(ctx, tx, s.RepoAccessChannel(repo))
	})
}
