package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/letagents"
)

// artifactColumns reads a room_artifacts row aliased a, with its linked
// tasks, as letagents.Artifact's db tags name its fields.
const artifactColumns = `a.room_id, a.identity_key, a.provider, a.kind, coalesce(a.artifact_id, '') AS artifact_id,
	coalesce(a.artifact_number, 0) AS artifact_number, coalesce(a.title, '') AS title, coalesce(a.url, '') AS url,
	coalesce(a.ref, '') AS ref, coalesce(a.state, '') AS state, a.source, a.first_seen_at, a.updated_at,
	array(SELECT t.task_id FROM room_artifact_tasks t WHERE t.room_id = a.room_id AND t.identity_key = a.identity_key ORDER BY t.task_id)
		AS task_ids`

// PublishArtifact records an artifact (normalised by
// letagents.NormalizeArtifact) and links its tasks. Publishing an
// artifact again fills in what it did not have and keeps what the new
// publish leaves out; a manual publish never replaces the source of one
// that came from a task's workflow or from GitHub. by is the publishing
// account (0 for nobody signed in): the first publisher owns the artifact,
// and another account may publish it again only as a room admin (admin);
// else the answer is letagents.NotOwner and nothing changes.
func (s *Store) PublishArtifact(ctx context.Context, a letagents.Artifact, by int64, admin bool, now time.Time) (letagents.Artifact, error) {
	var out letagents.Artifact
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			INSERT INTO room_artifacts AS a (room_id, identity_key, provider, kind, artifact_id, artifact_number, title, url, ref, state,
				source, first_seen_at, updated_at, publisher_account_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, $13)
			ON CONFLICT (room_id, identity_key) DO UPDATE SET
				artifact_id = coalesce(EXCLUDED.artifact_id, a.artifact_id),
				artifact_number = coalesce(EXCLUDED.artifact_number, a.artifact_number),
				title = coalesce(EXCLUDED.title, a.title),
				url = coalesce(EXCLUDED.url, a.url),
				ref = coalesce(EXCLUDED.ref, a.ref),
				state = coalesce(EXCLUDED.state, a.state),
				source = CASE WHEN EXCLUDED.source = 'manual' THEN a.source ELSE EXCLUDED.source END,
				updated_at = EXCLUDED.updated_at
			WHERE a.publisher_account_id IS NULL OR a.publisher_account_id = EXCLUDED.publisher_account_id OR $14`,
			a.RoomID, a.IdentityKey, a.Provider, a.Kind, nullString(a.ID), nullInt(a.Number), nullString(a.Title), nullString(a.URL),
			nullString(a.Ref), nullString(a.State), a.Source, now, nullInt(by), admin)
		switch {
		case pgCode(err) == foreignKeyViolation:
			return letagents.RoomNotFound()
		case err != nil:
			return fmt.Errorf("publish artifact: %w", err)
		case tag.RowsAffected() == 0: // the row is another account's
			return letagents.NotOwner("Another account published this artifact: only its publisher, or a room admin, can publish it again.")
		}
		if len(a.TaskIDs) > 0 {
			if _, err := tx.Exec(ctx, `
				INSERT INTO room_artifact_tasks (room_id, identity_key, task_id, linked_at)
				SELECT $1, $2, unnest($3::text[]), $4 ON CONFLICT DO NOTHING`,
				a.RoomID, a.IdentityKey, a.TaskIDs, now); err != nil {
				return fmt.Errorf("publish artifact: link tasks: %w", err)
			}
		}
		out, err = queryOne[letagents.Artifact](ctx, tx,
			`SELECT `+artifactColumns+` FROM room_artifacts a WHERE a.room_id = $1 AND a.identity_key = $2`, a.RoomID, a.IdentityKey)
		if err != nil {
			return fmt.Errorf("publish artifact: read back: %w", err)
		}
		return nil
	})
	if err != nil {
		return a, err
	}
	return out, nil
}

// Artifacts lists a room's artifacts by kind and identity, at most limit,
// only those linked to taskID when it is not "".
func (s *Store) Artifacts(ctx context.Context, roomID, taskID string, limit int) ([]letagents.Artifact, error) {
	return retried(ctx, s, func() ([]letagents.Artifact, error) {
		var exists bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM rooms WHERE id = $1)`, roomID).Scan(&exists); err != nil {
			return nil, fmt.Errorf("list artifacts: %w", err)
		}
		if !exists {
			return nil, letagents.RoomNotFound()
		}
		out, err := queryAll[letagents.Artifact](ctx, s.pool, `
			SELECT `+artifactColumns+` FROM room_artifacts a
			WHERE a.room_id = $1 AND ($2 = '' OR EXISTS (
				SELECT 1 FROM room_artifact_tasks t WHERE t.room_id = a.room_id AND t.identity_key = a.identity_key AND t.task_id = $2))
			ORDER BY a.kind, a.identity_key LIMIT $3`, roomID, taskID, limit)
		if err != nil {
			return nil, fmt.Errorf("list artifacts: %w", err)
		}
		return out, nil
	})
}

func nullInt(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}
