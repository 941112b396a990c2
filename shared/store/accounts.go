package store

import (
	"context"
	"crypto/subtle"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/letagents"
)

// Every secret a client presents is looked up by its SHA-256 (computed by
// the caller, shared/auth): the tables never hold one in clear.

// accountColumns reads an accounts row (as a) as letagents.Account's db
// tags name its fields.
const accountColumns = `a.id, a.provider, a.provider_user_id, a.login, a.display_name, a.avatar_url, a.created_at, a.updated_at`

// accountBySessionSQL reads the account of a browser session ($1 its
// hash) beside the session, as accountSessionRow names them.
const accountBySessionSQL = `SELECT ` + accountColumns + `, s.id AS session_id, s.expires_at
	FROM auth_sessions s JOIN accounts a ON a.id = s.account_id
	WHERE s.token_hash = $1`

type accountSessionRow struct {
	letagents.Account
	SessionID int64     `db:"session_id"`
	ExpiresAt time.Time `db:"expires_at"`
}

// accountByOwnerTokenSQL reads the account of an owner token ($1 its
// hash) beside the token's id, as accountTokenRow names them.
const accountByOwnerTokenSQL = `SELECT ` + accountColumns + `, t.id AS token_id
	FROM owner_tokens t JOIN accounts a ON a.id = t.account_id
	WHERE t.token_hash = $1`

type accountTokenRow struct {
	letagents.Account
	TokenID int64 `db:"token_id"`
}

// SignIn is everything one successful GitHub sign-in writes, in one
// transaction: the account, its GitHub token, and the new credential.
type SignIn struct {
	Account letagents.Account // Provider, ProviderUserID, Login, DisplayName, AvatarURL
	// GitHubToken is the account's GitHub access token, sealed; its expiry
	// is zero when GitHub gave none.
	GitHubToken          []byte
	GitHubTokenExpiresAt time.Time
	// DeviceRequest, when set, is the hash of the device flow this sign-in
	// completes: it is consumed, and the sign-in fails with NotFound if
	// another poll consumed it first.
	DeviceRequest []byte
	// Exactly one of OwnerTokenHash (device flow) and SessionHash (browser)
	// is set.
	OwnerTokenHash   []byte
	SessionHash      []byte
	SessionExpiresAt time.Time
	Now              time.Time
}

// SignIn records a sign-in and returns the account and the id of the
// credential it minted. The account's cached repository decisions are
// dropped, so new access (or its loss) shows at once, to its open
// connections too (AccountAccessChannel).
func (s *Store) SignIn(ctx context.Context, in SignIn) (letagents.Account, int64, error) {
	var acct letagents.Account
	var credID int64
	err := s.withTx(ctx, func(tx pgx.Tx) (err error) {
		if in.DeviceRequest != nil {
			tag, err := tx.Exec(ctx, `DELETE FROM device_requests WHERE id_hash = $1`, in.DeviceRequest)
			if err != nil {
				return fmt.Errorf("sign in: consume device request: %w", err)
			}
			if tag.RowsAffected() == 0 {
				return letagents.Errorf(letagents.NotFound, "Device authorization request not found")
			}
		}
		a := in.Account
		acct, err = queryOne[letagents.Account](ctx, tx, `
			INSERT INTO accounts AS a (provider, provider_user_id, login, display_name, avatar_url, created_at, updated_at, login_key, name_key)
			VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8)
			ON CONFLICT (provider, provider_user_id) DO UPDATE
			SET login = EXCLUDED.login, display_name = EXCLUDED.display_name,
			    avatar_url = EXCLUDED.avatar_url, updated_at = EXCLUDED.updated_at,
			    login_key = EXCLUDED.login_key, name_key = EXCLUDED.name_key
			RETURNING `+accountColumns,
			a.Provider, a.ProviderUserID, a.Login, a.DisplayName, a.AvatarURL, in.Now, letagents.NameKey(a.Login), letagents.NameKey(a.DisplayName))
		if err != nil {
			return fmt.Errorf("sign in: upsert account: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO github_tokens (account_id, sealed, expires_at, updated_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (account_id) DO UPDATE
			SET sealed = EXCLUDED.sealed, expires_at = EXCLUDED.expires_at, updated_at = EXCLUDED.updated_at`,
			acct.ID, in.GitHubToken, nullTime(in.GitHubTokenExpiresAt), in.Now); err != nil {
			return fmt.Errorf("sign in: store GitHub token: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM github_repo_access WHERE account_id = $1`, acct.ID); err != nil {
			return fmt.Errorf("sign in: clear access cache: %w", err)
		}
		if err := ringAccess(ctx, tx, s.AccountAccessChannel(acct.ID)); err != nil {
			return fmt.Errorf("sign in: %w", err)
		}
		if in.OwnerTokenHash != nil {
			err = tx.QueryRow(ctx, `INSERT INTO owner_tokens (account_id, token_hash, created_at) VALUES ($1, $2, $3) RETURNING id`,
				acct.ID, in.OwnerTokenHash, in.Now).Scan(&credID)
		} else {
			err = tx.QueryRow(ctx, `INSERT INTO auth_sessions (account_id, token_hash, created_at, expires_at) VALUES ($1, $2, $3, $4) RETURNING id`,
				acct.ID, in.SessionHash, in.Now, in.SessionExpiresAt).Scan(&credID)
		}
		if err != nil {
			return fmt.Errorf("sign in: mint credential: %w", err)
		}
		return nil
	})
	if err != nil {
		return acct, 0, err
	}
	return acct, credID, nil
}

// LocalOwner returns the local owner's account (letagents.LocalOwner),
// creating it the first time. Concurrent first calls meet on the
// (provider, provider_user_id) key and get the same row.
func (s *Store) LocalOwner(ctx context.Context, now time.Time) (letagents.Account, error) {
	a := letagents.LocalOwner()
	acct, err := retried(ctx, s, func() (letagents.Account, error) {
		return queryOne[letagents.Account](ctx, s.pool, `
			INSERT INTO accounts AS a (provider, provider_user_id, login, display_name, created_at, updated_at, login_key, name_key)
			VALUES ($1, $2, $3, $4, $5, $5, $6, $7)
			ON CONFLICT (provider, provider_user_id) DO UPDATE SET provider = EXCLUDED.provider
			RETURNING `+accountColumns,
			a.Provider, a.ProviderUserID, a.Login, a.DisplayName, now, letagents.NameKey(a.Login), letagents.NameKey(a.DisplayName))
	})
	if err != nil {
		return acct, fmt.Errorf("local owner account: %w", err)
	}
	return acct, nil
}

// AccountBySession returns the account of a live browser session and the
// session's id; Unauthorized when there is none (expired sessions are
// deleted on the way).
func (s *Store) AccountBySession(ctx context.Context, hash []byte, now time.Time) (letagents.Account, int64, error) {
	row, err := retried(ctx, s, func() (accountSessionRow, error) {
		return queryOne[accountSessionRow](ctx, s.pool, accountBySessionSQL, hash)
	})
	a, id := row.Account, row.SessionID
	switch {
	case isNoRows(err):
		return a, 0, letagents.Errorf(letagents.Unauthorized, "Session not found")
	case err != nil:
		return a, 0, fmt.Errorf("read session: %w", err)
	case !now.Before(row.ExpiresAt):
		if _, err := s.pool.Exec(ctx, `DELETE FROM auth_sessions WHERE id = $1`, id); err != nil {
			return a, 0, fmt.Errorf("delete expired session: %w", err)
		}
		return a, 0, letagents.Errorf(letagents.Unauthorized, "Session expired")
	}
	return a, id, nil
}

// AccountByOwnerToken returns the account of an owner token and the
// token's id; Unauthorized when the token is unknown or revoked.
func (s *Store) AccountByOwnerToken(ctx context.Context, hash []byte) (letagents.Account, int64, error) {
	row, err := retried(ctx, s, func() (accountTokenRow, error) {
		return queryOne[accountTokenRow](ctx, s.pool, accountByOwnerTokenSQL, hash)
	})
	a, id := row.Account, row.TokenID
	switch {
	case isNoRows(err):
		return a, 0, letagents.Errorf(letagents.Unauthorized, "Owner token not found")
	case err != nil:
		return a, 0, fmt.Errorf("read owner token: %w", err)
	}
	return a, id, nil
}

// DeleteSession ends a browser session, and rings its account's access
// channel so that streams it opened end now.
func (s *Store) DeleteSession(ctx context.Context, id int64) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		var account int64
		err := tx.QueryRow(ctx, `DELETE FROM auth_sessions WHERE id = $1 RETURNING account_id`, id).Scan(&account)
		switch {
		case isNoRows(err):
			return nil
		case err != nil:
			return fmt.Errorf("delete session: %w", err)
		}
		return ringAccess(ctx, tx, s.AccountAccessChannel(account))
	})
}

// GitHubToken is an account's stored GitHub access token.
type GitHubToken struct {
	Sealed       []byte
	GitHubUserID string    // the account's provider_user_id, which the seal is bound to
	ExpiresAt    time.Time // zero for none
}

// githubTokenSQL reads an account's ($1) GitHub token as githubTokenRow
// names it.
const githubTokenSQL = `SELECT g.sealed, a.provider_user_id, g.expires_at
	FROM github_tokens g JOIN accounts a ON a.id = g.account_id
	WHERE g.account_id = $1`

// githubTokenRow scans githubTokenSQL; expires_at is null for a token
// that does not expire.
type githubTokenRow struct {
	Sealed       []byte     `db:"sealed"`
	GitHubUserID string     `db:"provider_user_id"`
	ExpiresAt    *time.Time `db:"expires_at"`
}

// GitHubToken returns an account's GitHub token; NotFound when it has none.
func (s *Store) GitHubToken(ctx context.Context, accountID int64) (GitHubToken, error) {
	row, err := retried(ctx, s, func() (githubTokenRow, error) {
		return queryOne[githubTokenRow](ctx, s.pool, githubTokenSQL, accountID)
	})
	t := GitHubToken{Sealed: row.Sealed, GitHubUserID: row.GitHubUserID, ExpiresAt: deref(row.ExpiresAt)}
	switch {
	case isNoRows(err):
		return t, letagents.Errorf(letagents.NotFound, "No GitHub token for this account")
	case err != nil:
		return t, fmt.Errorf("read GitHub token: %w", err)
	}
	return t, nil
}

// CreateAuthState records an OAuth state for the web sign-in, bound to
// the browser that started it by browserHash (the hash of a nonce in that
// browser's cookie), purging states that expired.
func (s *Store) CreateAuthState(ctx context.Context, state string, browserHash []byte, redirectTo string, now, expiresAt time.Time) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM auth_states WHERE expires_at <= $1`, now); err != nil {
		return fmt.Errorf("purge auth states: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO auth_states (state, browser_hash, redirect_to, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		state, browserHash, redirectTo, now, expiresAt); err != nil {
		return fmt.Errorf("create auth state: %w", err)
	}
	return nil
}

// ConsumeAuthState redeems an OAuth state once and returns where the
// sign-in should lead; Invalid when it is unknown, used or expired, or
// when browserHash is not the one the state was created for (another
// browser's callback: the state is spent all the same, so a leaked state
// cannot be tried again).
func (s *Store) ConsumeAuthState(ctx context.Context, state string, browserHash []byte, now time.Time) (string, error) {
	var (
		redirectTo string
		bound      []byte
	)
	err := s.pool.QueryRow(ctx, `DELETE FROM auth_states WHERE state = $1 AND expires_at > $2 RETURNING redirect_to, browser_hash`,
		state, now).Scan(&redirectTo, &bound)
	switch {
	case isNoRows(err):
		return "", letagents.Errorf(letagents.Invalid, "Invalid or expired auth state")
	case err != nil:
		return "", fmt.Errorf("consume auth state: %w", err)
	}
	if subtle.ConstantTimeCompare(bound, browserHash) != 1 {
		return "", letagents.Errorf(letagents.Invalid, "This sign-in was started in another browser (or its cookie expired); sign in again")
	}
	return redirectTo, nil
}

// DeviceRequest is a pending GitHub device flow.
type DeviceRequest struct {
	IDHash          []byte
	DeviceCode      []byte // sealed
	UserCode        string
	VerificationURI string
	Interval        time.Duration
	RoomID          string
	CreatedAt       time.Time
	ExpiresAt       time.Time
	LastPollAt      time.Time // zero before the first poll
}

// claimDeviceRequestSQL reads a device flow ($1 its id hash) as
// deviceRequestRow names it, locked for the poll that claims it.
const claimDeviceRequestSQL = `SELECT device_code, user_code, verification_uri, interval_seconds, room_id, created_at, expires_at, last_poll_at
	FROM device_requests WHERE id_hash = $1 FOR UPDATE`

// deviceRequestRow scans a device_requests row; room_id is null for a
// flow started outside a room, last_poll_at before the first poll.
type deviceRequestRow struct {
	DeviceCode      []byte     `db:"device_code"`
	UserCode        string     `db:"user_code"`
	VerificationURI string     `db:"verification_uri"`
	IntervalSeconds int        `db:"interval_seconds"`
	RoomID          *string    `db:"room_id"`
	CreatedAt       time.Time  `db:"created_at"`
	ExpiresAt       time.Time  `db:"expires_at"`
	LastPollAt      *time.Time `db:"last_poll_at"`
}

func (r deviceRequestRow) request(idHash []byte) DeviceRequest {
	return DeviceRequest{IDHash: idHash, DeviceCode: r.DeviceCode, UserCode: r.UserCode, VerificationURI: r.VerificationURI,
		Interval: time.Duration(r.IntervalSeconds) * time.Second, RoomID: deref(r.RoomID), CreatedAt: r.CreatedAt,
		ExpiresAt: r.ExpiresAt, LastPollAt: deref(r.LastPollAt)}
}

// CreateDeviceRequest stores a new device flow, purging flows that ended
// long ago without anyone polling them to the end.
func (s *Store) CreateDeviceRequest(ctx context.Context, d DeviceRequest) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM device_requests WHERE expires_at < $1`, d.CreatedAt.Add(-time.Hour)); err != nil {
		return fmt.Errorf("purge device requests: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `
		INSERT INTO device_requests (id_hash, device_code, user_code, verification_uri, interval_seconds, room_id, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		d.IDHash, d.DeviceCode, d.UserCode, d.VerificationURI, int(d.Interval/time.Second), nullString(d.RoomID), d.CreatedAt, d.ExpiresAt); err != nil {
		return fmt.Errorf("create device request: %w", err)
	}
	return nil
}

// ClaimDevicePoll takes the right to ask GitHub about a device flow now:
// it stamps the poll time if at least the interval passed since the last
// poll. So however many instances poll one flow, GitHub hears at most one
// poll per interval. NotFound for an unknown request, Gone (and deleted)
// for an expired one, RateLimited (with the interval) when too early.
func (s *Store) ClaimDevicePoll(ctx context.Context, idHash []byte, now time.Time) (DeviceRequest, error) {
	d := DeviceRequest{IDHash: idHash}
	expired := false
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		row, err := queryOne[deviceRequestRow](ctx, tx, claimDeviceRequestSQL, idHash)
		switch {
		case isNoRows(err):
			return letagents.Errorf(letagents.NotFound, "Device authorization request not found")
		case err != nil:
			return fmt.Errorf("claim device poll: %w", err)
		}
		d = row.request(idHash)
		if !now.Before(d.ExpiresAt) {
			// Deleted for good: the refusal commits.
			expired = true
			if _, err := tx.Exec(ctx, `DELETE FROM device_requests WHERE id_hash = $1`, idHash); err != nil {
				return fmt.Errorf("delete expired device request: %w", err)
			}
			return nil
		}
		if !d.LastPollAt.IsZero() && now.Before(d.LastPollAt.Add(d.Interval)) {
			return &letagents.Error{Kind: letagents.RateLimited, Message: "Polling too quickly",
				Fields: map[string]any{"interval": row.IntervalSeconds}, RetryAfter: d.LastPollAt.Add(d.Interval).Sub(now)}
		}
		if _, err := tx.Exec(ctx, `UPDATE device_requests SET last_poll_at = $2 WHERE id_hash = $1`, idHash, now); err != nil {
			return fmt.Errorf("claim device poll: %w", err)
		}
		return nil
	})
	switch {
	case err != nil:
		return d, err
	case expired:
		return d, letagents.Errorf(letagents.Gone, "The device authorization request expired")
	}
	d.LastPollAt = now
	return d, nil
}

// SlowDownDevice raises a flow's poll interval, as GitHub asked.
func (s *Store) SlowDownDevice(ctx context.Context, idHash []byte, interval time.Duration) error {
	if _, err := s.pool.Exec(ctx, `UPDATE device_requests SET interval_seconds = greatest(interval_seconds, $2) WHERE id_hash = $1`,
		idHash, int(interval/time.Second)); err != nil {
		return fmt.Errorf("slow down device request: %w", err)
	}
	return nil
}

// DeleteDeviceRequest ends a flow that GitHub ended (denied or expired).
func (s *Store) DeleteDeviceRequest(ctx context.Context, idHash []byte) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM device_requests WHERE id_hash = $1`, idHash); err != nil {
		return fmt.Errorf("delete device request: %w", err)
	}
	return nil
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
