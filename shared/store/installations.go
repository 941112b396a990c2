package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/githubhook"
	"github.com/letagents/letagents-go/shared/letagents"
)

// GitHubInstallation is an installation of the GitHub App as this
// service heard of it; Account is "" until an installation delivery
// names it.
type GitHubInstallation struct {
	ID            int64      `db:"installation_id"`
	Account       string     `db:"account_login"`
	AccountType   string     `db:"account_type"`
	Selection     string     `db:"repository_selection"`
	SuspendedAt   *time.Time `db:"suspended_at"`
	UninstalledAt *time.Time `db:"uninstalled_at"`
	UpdatedAt     time.Time  `db:"updated_at"`
}

// GitHubRepoLink is a repository an installation of the App covers, or
// covered until RemovedAt.
type GitHubRepoLink struct {
	RoomID         string     `db:"room_id"`
	FullName       string     `db:"full_name"`
	GitHubRepoID   int64      `db:"github_repo_id"`
	InstallationID int64      `db:"installation_id"`
	RemovedAt      *time.Time `db:"removed_at"`
	UpdatedAt      time.Time  `db:"updated_at"`
}

// GitHubConnection is what a repo room knows of the GitHub App: the
// installation covering (or last covering) its repository, nil for
// none.
type GitHubConnection struct {
	Repo         *GitHubRepoLink
	Installation *GitHubInstallation
}

// Connected says whether the App covers the repository now: listed, not
// removed, by an installation neither suspended nor uninstalled.
func (c GitHubConnection) Connected() bool {
	return c.Repo != nil && c.Installation != nil && c.Repo.RemovedAt == nil && c.Installation.SuspendedAt == nil &&
		c.Installation.UninstalledAt == nil
}

// GitHubConnection reads what the App covers of a repo room's repository.
func (s *Store) GitHubConnection(ctx context.Context, repoRoom string) (GitHubConnection, error) {
	return retried(ctx, s, func() (GitHubConnection, error) {
		var c GitHubConnection
		link, err := queryOne[GitHubRepoLink](ctx, s.pool, `
			SELECT room_id, full_name, coalesce(github_repo_id, 0) AS github_repo_id, installation_id, removed_at, updated_at
			FROM github_installation_repos WHERE room_id = $1`, repoRoom)
		switch {
		case isNoRows(err):
			return c, nil
		case err != nil:
			return c, fmt.Errorf("read the repository's installation: %w", err)
		}
		in, err := queryOne[GitHubInstallation](ctx, s.pool, `
			SELECT installation_id, coalesce(account_login, '') AS account_login, coalesce(account_type, '') AS account_type,
				coalesce(repository_selection, '') AS repository_selection, suspended_at, uninstalled_at, updated_at
			FROM github_installations WHERE installation_id = $1`, link.InstallationID)
		if err != nil {
			return c, fmt.Errorf("read the installation: %w", err)
		}
		c.Repo, c.Installation = &link, &in
		return c, nil
	})
}

// followInstallation records, inside a delivery's transaction, what the
// delivery says of the App's reach: an installation's change, or, for
// any other delivery of the App, that its installation covers its
// repository. Each open repo room whose connection an installation's
// change makes or breaks hears of it in a status line.
func (s *Store) followInstallation(ctx context.Context, tx pgx.Tx, d GitHubDelivery, now time.Time) error {
	if c := d.Installation; c != nil {
		return s.applyInstallation(ctx, tx, c, now)
	}
	if d.InstallationID <= 0 || d.RoomID == "" {
		return nil
	}
	// Known only from an event of its: no account yet, and a repository
	// it covers, unless a removal said otherwise (which this delivery,
	// perhaps sent before it, does not undo).
	if _, err := tx.Exec(ctx, `
		INSERT INTO github_installations (installation_id, updated_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
		d.InstallationID, now); err != nil {
		return fmt.Errorf("note the installation: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO github_installation_repos AS r (room_id, full_name, github_repo_id, installation_id, updated_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (room_id) DO UPDATE SET full_name = EXCLUDED.full_name,
			github_repo_id = coalesce(EXCLUDED.github_repo_id, r.github_repo_id)
		WHERE r.installation_id = EXCLUDED.installation_id`,
		d.RoomID, d.Repo, nullInt(d.RepoID), d.InstallationID, now); err != nil {
		return fmt.Errorf("note the installation's repository: %w", err)
	}
	return nil
}

func (s *Store) applyInstallation(ctx context.Context, tx pgx.Tx, c *githubhook.InstallationChange, now time.Time) error {
	var suspended, uninstalled string // SQL for the new values of those columns
	switch c.Action {
	case "deleted":
		suspended, uninstalled = "i.suspended_at", "$6"
	case "suspend":
		suspended, uninstalled = "$6", "NULL"
	case "created", "unsuspend":
		suspended, uninstalled = "NULL", "NULL"
	default: // new_permissions_accepted, added, removed: a live installation
		suspended, uninstalled = "i.suspended_at", "NULL"
	}
	var was GitHubInstallation
	err := tx.QueryRow(ctx, `SELECT suspended_at, uninstalled_at FROM github_installations WHERE installation_id = $1 FOR UPDATE`, c.ID).
		Scan(&was.SuspendedAt, &was.UninstalledAt)
	if err != nil && !isNoRows(err) {
		return fmt.Errorf("read the installation: %w", err)
	}
	wasLive := err == nil && was.SuspendedAt == nil && was.UninstalledAt == nil
	var live bool
	if err := tx.QueryRow(ctx, `
		INSERT INTO github_installations AS i (installation_id, account_login, account_type, repository_selection, suspended_at,
			uninstalled_at, updated_at)
		VALUES ($1, $2, $3, $4, CASE WHEN $5 = 'suspend' THEN $6::timestamptz END, CASE WHEN $5 = 'deleted' THEN $6::timestamptz END, $6)
		ON CONFLICT (installation_id) DO UPDATE SET account_login = coalesce(EXCLUDED.account_login, i.account_login),
			account_type = coalesce(EXCLUDED.account_type, i.account_type),
			repository_selection = coalesce(EXCLUDED.repository_selection, i.repository_selection),
			suspended_at = `+suspended+`, uninstalled_at = `+uninstalled+`, updated_at = $6
		RETURNING suspended_at IS NULL AND uninstalled_at IS NULL`,
		c.ID, nullString(c.Account), nullString(c.AccountType), nullString(c.Selection), c.Action, now).Scan(&live); err != nil {
		return fmt.Errorf("record the installation: %w", err)
	}
	for _, r := range c.Added {
		if _, err := tx.Exec(ctx, `
			INSERT INTO github_installation_repos (room_id, full_name, github_repo_id, installation_id, updated_at)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (room_id) DO UPDATE SET full_name = EXCLUDED.full_name, github_repo_id = EXCLUDED.github_repo_id,
				installation_id = EXCLUDED.installation_id, removed_at = NULL, updated_at = EXCLUDED.updated_at`,
			r.RoomID, r.FullName, nullInt(r.ID), c.ID, now); err != nil {
			return fmt.Errorf("record %s in the installation: %w", r.FullName, err)
		}
		if live {
			if err := s.connectionLine(ctx, tx, r.RoomID, fmt.Sprintf("The GitHub App now covers %s (installation %d%s): its pull requests get the %s check.",
				r.FullName, c.ID, account(c.Account), letagents.LeaseCheckName)); err != nil {
				return err
			}
		}
	}
	for _, r := range c.Removed {
		if _, err := tx.Exec(ctx, `
			UPDATE github_installation_repos SET removed_at = $3, updated_at = $3 WHERE room_id = $1 AND installation_id = $2`,
			r.RoomID, c.ID, now); err != nil {
			return fmt.Errorf("remove %s from the installation: %w", r.FullName, err)
		}
		if err := s.connectionLine(ctx, tx, r.RoomID, fmt.Sprintf("The GitHub App no longer covers %s (installation %d%s).",
			r.FullName, c.ID, account(c.Account))); err != nil {
			return err
		}
	}
	if live == wasLive || len(c.Added)+len(c.Removed) > 0 {
		return nil
	}
	// The whole installation came or went: each repository it covers hears.
	covered, err := tx.Query(ctx, `SELECT room_id, full_name FROM github_installation_repos WHERE installation_id = $1 AND removed_at IS NULL
		ORDER BY room_id`, c.ID)
	if err != nil {
		return fmt.Errorf("list the installation's repositories: %w", err)
	}
	type repo struct{ room, name string }
	var repos []repo
	for covered.Next() {
		var r repo
		if err := covered.Scan(&r.room, &r.name); err != nil {
			covered.Close()
			return fmt.Errorf("list the installation's repositories: %w", err)
		}
		repos = append(repos, r)
	}
	covered.Close()
	if err := covered.Err(); err != nil {
		return fmt.Errorf("list the installation's repositories: %w", err)
	}
	verb := map[bool]string{true: "is connected again", false: "is no longer connected"}[live]
	what, ok := map[string]string{"created": "installed", "deleted": "uninstalled", "suspend": "suspended", "unsuspend": "unsuspended"}[c.Action]
	if !ok {
		what = "changed (" + c.Action + ")"
	}
	for _, r := range repos {
		if err := s.connectionLine(ctx, tx, r.room, fmt.Sprintf("GitHub App installation %d%s was %s: %s %s.", c.ID, account(c.Account),
			what, r.name, verb)); err != nil {
			return err
		}
	}
	return nil
}

func account(login string) string {
	if login == "" {
		return ""
	}
	return " on " + login
}

// connectionLine tells a repo room, when it is open, of a change to its
// connection with GitHub.
func (s *Store) connectionLine(ctx context.Context, tx pgx.Tx, room, text string) error {
	var open bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM rooms WHERE id = $1)`, room).Scan(&open); err != nil {
		return fmt.Errorf("find the repo room: %w", err)
	}
	if !open {
		return nil
	}
	return s.postLine(ctx, tx, room, text)
}
