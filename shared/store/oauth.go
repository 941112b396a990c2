package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/letagents"
)

// The OAuth 2.1 authorization server's state (migration 0030), for
// shared/auth's flows. Secrets arrive hashed; expired rows are invisible
// to reads and removed as new ones are written.

// OAuthClient is a dynamically registered public client.
type OAuthClient struct {
	ID           string    `db:"id"`
	Name         string    `db:"name"`
	RedirectURIs []string  `db:"redirect_uris"`
	CreatedAt    time.Time `db:"created_at"`
}

// OAuthRequest is an authorization under way, from /oauth/authorize to
// the consent page's answer.
type OAuthRequest struct {
	IDHash        []byte    `db:"id_hash"`
	ClientID      string    `db:"client_id"`
	RedirectURI   string    `db:"redirect_uri"`
	CodeChallenge string    `db:"code_challenge"`
	State         string    `db:"state"`
	Resource      string    `db:"resource"`
	AccountID     *int64    `db:"account_id"`
	ConsentHash   []byte    `db:"consent_hash"`
	ExpiresAt     time.Time `db:"expires_at"`
}

// OAuthCode is an authorization code, redeemable once.
type OAuthCode struct {
	CodeHash      []byte    `db:"code_hash"`
	ClientID      string    `db:"client_id"`
	RedirectURI   string    `db:"redirect_uri"`
	CodeChallenge string    `db:"code_challenge"`
	Resource      string    `db:"resource"`
	AccountID     int64     `db:"account_id"`
	ExpiresAt     time.Time `db:"expires_at"`
}

// OAuthIssue is a token pair to store: a new access token, and the
// refresh token that replaces the grant's (or starts it).
type OAuthIssue struct {
	AccessHash       []byte
	AccessExpiresAt  time.Time
	RefreshHash      []byte
	RefreshExpiresAt time.Time
	Now              time.Time
}

// CreateOAuthClient registers a client.
func (s *Store) CreateOAuthClient(ctx context.Context, c OAuthClient) error {
	if _, err := s.pool.Exec(ctx, `INSERT INTO oauth_clients (id, name, redirect_uris, created_at) VALUES ($1, $2, $3, $4)`,
		c.ID, c.Name, c.RedirectURIs, c.CreatedAt); err != nil {
		return fmt.Errorf("register OAuth client: %w", err)
	}
	return nil
}

// OAuthClient reads a registered client; NotFound when there is none.
func (s *Store) OAuthClient(ctx context.Context, id string) (OAuthClient, error) {
	c, err := retried(ctx, s, func() (OAuthClient, error) {
		return queryOne[OAuthClient](ctx, s.pool, `SELECT id, name, redirect_uris, created_at FROM oauth_clients WHERE id = $1`, id)
	})
	switch {
	case isNoRows(err):
		return c, letagents.Errorf(letagents.NotFound, "unknown client_id")
	case err != nil:
		return c, fmt.Errorf("read OAuth client: %w", err)
	}
	return c, nil
}

// CreateOAuthRequest records an authorization under way, clearing away
// expired requests and codes.
func (s *Store) CreateOAuthRequest(ctx context.Context, r OAuthRequest, now time.Time) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			WITH r AS (DELETE FROM oauth_requests WHERE expires_at <= $1)
			DELETE FROM oauth_codes WHERE expires_at <= $1`, now); err != nil {
			return fmt.Errorf("clear expired OAuth requests: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO oauth_requests (id_hash, client_id, redirect_uri, code_challenge, state, resource, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			r.IDHash, r.ClientID, r.RedirectURI, r.CodeChallenge, r.State, r.Resource, r.ExpiresAt); err != nil {
			return fmt.Errorf("record OAuth request: %w", err)
		}
		return nil
	})
}

const oauthRequestColumns = `id_hash, client_id, redirect_uri, code_challenge, state, resource, account_id, consent_hash, expires_at`

// ShowOAuthRequest binds a pending request to the account being asked for
// consent and to the consent nonce of the page shown to it (replacing any
// earlier page's). A request already shown to another account, expired or
// unknown is NotFound.
func (s *Store) ShowOAuthRequest(ctx context.Context, idHash []byte, accountID int64, consentHash []byte, now time.Time) (OAuthRequest, error) {
	r, err := queryOne[OAuthRequest](ctx, s.pool, `
		UPDATE oauth_requests SET account_id = $2, consent_hash = $3
		WHERE id_hash = $1 AND expires_at > $4 AND (account_id IS NULL OR account_id = $2)
		RETURNING `+oauthRequestColumns, idHash, accountID, consentHash, now)
	switch {
	case isNoRows(err):
		return r, letagents.Errorf(letagents.NotFound, "This authorization request is unknown or expired; start again from your MCP client")
	case err != nil:
		return r, fmt.Errorf("show OAuth request: %w", err)
	}
	return r, nil
}

// DecideOAuthRequest ends a pending request with the answer of the
// consent page whose nonce hashes to consentHash, shown to accountID.
// With a code (allowed), the code is stored in the same transaction.
// A request not shown so, or expired, is NotFound.
func (s *Store) DecideOAuthRequest(ctx context.Context, idHash, consentHash []byte, accountID int64, code *OAuthCode, now time.Time) (OAuthRequest, error) {
	var r OAuthRequest
	err := s.withTx(ctx, func(tx pgx.Tx) (err error) {
		r, err = queryOne[OAuthRequest](ctx, tx, `
			DELETE FROM oauth_requests
			WHERE id_hash = $1 AND consent_hash = $2 AND account_id = $3 AND expires_at > $4
			RETURNING `+oauthRequestColumns, idHash, consentHash, accountID, now)
		if isNoRows(err) {
			return letagents.Errorf(letagents.NotFound, "This authorization request is unknown, expired or already answered; start again from your MCP client")
		}
		if err != nil || code == nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO oauth_codes (code_hash, client_id, redirect_uri, code_challenge, resource, account_id, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			code.CodeHash, r.ClientID, r.RedirectURI, r.CodeChallenge, r.Resource, accountID, code.ExpiresAt); err != nil {
			return fmt.Errorf("store OAuth code: %w", err)
		}
		return nil
	})
	if err != nil && !letagents.IsKind(err, letagents.NotFound) {
		err = fmt.Errorf("decide OAuth request: %w", err)
	}
	return r, err
}

// TakeOAuthCode redeems a code: it is deleted whatever the caller then
// finds wrong with the exchange, so it never works twice. An unknown,
// spent or expired code is NotFound.
func (s *Store) TakeOAuthCode(ctx context.Context, codeHash []byte, now time.Time) (OAuthCode, error) {
	c, err := queryOne[OAuthCode](ctx, s.pool, `
		DELETE FROM oauth_codes WHERE code_hash = $1
		RETURNING code_hash, client_id, redirect_uri, code_challenge, resource, account_id, expires_at`, codeHash)
	switch {
	case isNoRows(err) || err == nil && !c.ExpiresAt.After(now):
		return c, letagents.Errorf(letagents.NotFound, "the authorization code is invalid, expired or already used")
	case err != nil:
		return c, fmt.Errorf("redeem OAuth code: %w", err)
	}
	return c, nil
}

// CreateOAuthGrant starts a grant of clientID by accountID for resource,
// with its first token pair; expired grants and access tokens go.
func (s *Store) CreateOAuthGrant(ctx context.Context, clientID string, accountID int64, resource string, in OAuthIssue) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			WITH g AS (DELETE FROM oauth_grants WHERE refresh_expires_at <= $1)
			DELETE FROM oauth_access_tokens WHERE expires_at <= $1`, in.Now); err != nil {
			return fmt.Errorf("clear expired OAuth grants: %w", err)
		}
		var id int64
		if err := tx.QueryRow(ctx, `
			INSERT INTO oauth_grants (client_id, account_id, resource, refresh_hash, refresh_expires_at, created_at)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
			clientID, accountID, resource, in.RefreshHash, in.RefreshExpiresAt, in.Now).Scan(&id); err != nil {
			return fmt.Errorf("create OAuth grant: %w", err)
		}
		return insertAccessToken(ctx, tx, id, in)
	})
}

func insertAccessToken(ctx context.Context, tx pgx.Tx, grant int64, in OAuthIssue) error {
	if _, err := tx.Exec(ctx, `INSERT INTO oauth_access_tokens (token_hash, grant_id, expires_at) VALUES ($1, $2, $3)`,
		in.AccessHash, grant, in.AccessExpiresAt); err != nil {
		return fmt.Errorf("store OAuth access token: %w", err)
	}
	return nil
}

// ErrRefreshReplayed is RefreshOAuthGrant's answer to a refresh token that
// was already rotated away: someone used it twice, so the grant, and
// every token of it, has been ended.
var ErrRefreshReplayed = letagents.Errorf(letagents.NotFound, "the refresh token was already used; the grant is revoked, sign in again")

// RefreshOAuthGrant rotates the refresh token of clientID's grant that
// oldHash names to in.RefreshHash and adds in's access token; it returns
// the grant's resource. wantResource, unless "", must be that resource
// (scheme, host and trailing slash compared loosely). A refresh token of
// another client or resource, expired or unknown is NotFound and left as
// it was; one rotated away already ends its grant (ErrRefreshReplayed).
func (s *Store) RefreshOAuthGrant(ctx context.Context, clientID string, oldHash []byte, wantResource string, in OAuthIssue) (resource string, err error) {
	replayed := false
	err = s.withTx(ctx, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `
			UPDATE oauth_grants SET refresh_hash = $3, refresh_expires_at = $4
			WHERE refresh_hash = $1 AND client_id = $2 AND refresh_expires_at > $5
			  AND ($6 = '' OR rtrim(lower(resource), '/') = rtrim(lower($6), '/'))
			RETURNING id, resource`, oldHash, clientID, in.RefreshHash, in.RefreshExpiresAt, in.Now, wantResource).Scan(&id, &resource)
		switch {
		case isNoRows(err):
			tag, err := tx.Exec(ctx, `DELETE FROM oauth_grants WHERE id = (SELECT grant_id FROM oauth_spent_refresh WHERE refresh_hash = $1)`, oldHash)
			if err != nil {
				return fmt.Errorf("revoke replayed OAuth grant: %w", err)
			}
			replayed = tag.RowsAffected() > 0
			return nil
		case err != nil:
			return fmt.Errorf("rotate OAuth refresh token: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO oauth_spent_refresh (refresh_hash, grant_id) VALUES ($1, $2)`, oldHash, id); err != nil {
			return fmt.Errorf("keep spent OAuth refresh token: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM oauth_access_tokens WHERE grant_id = $1 AND expires_at <= $2`, id, in.Now); err != nil {
			return fmt.Errorf("clear expired OAuth access tokens: %w", err)
		}
		return insertAccessToken(ctx, tx, id, in)
	})
	switch {
	case err != nil:
		return "", err
	case replayed:
		return "", ErrRefreshReplayed
	case resource == "":
		return "", letagents.Errorf(letagents.NotFound, "the refresh token is invalid or expired")
	}
	return resource, nil
}

// AccountByOAuthToken reads the account of an unexpired access token
// beside its grant's id, which stays the same across refreshes.
func (s *Store) AccountByOAuthToken(ctx context.Context, hash []byte, now time.Time) (letagents.Account, int64, error) {
	row, err := retried(ctx, s, func() (accountTokenRow, error) {
		return queryOne[accountTokenRow](ctx, s.pool, `SELECT `+accountColumns+`, g.id AS token_id
			FROM oauth_access_tokens t JOIN oauth_grants g ON g.id = t.grant_id JOIN accounts a ON a.id = g.account_id
			WHERE t.token_hash = $1 AND t.expires_at > $2`, hash, now)
	})
	switch {
	case isNoRows(err):
		return row.Account, 0, letagents.Errorf(letagents.Unauthorized, "OAuth access token not found or expired")
	case err != nil:
		return row.Account, 0, fmt.Errorf("read OAuth access token: %w", err)
	}
	return row.Account, row.TokenID, nil
}
