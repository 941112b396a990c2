package store

import (
	"context"
	"fmt"
	"time"
)

// Take takes one token from the rate-limit bucket of kind and key (a
// client address), which holds perMinute tokens when full and regains one
// every minute/perMinute: bursts up to perMinute, perMinute a minute
// sustained, with no calendar boundary to double it. It returns 0 when a
// token was taken, otherwise how long until one will be there (nothing is
// taken then). One upsert decides under the bucket's row lock, so the
// limit holds across every instance and however many requests race.
func (s *Store) Take(ctx context.Context, kind, key string, perMinute int, now time.Time) (time.Duration, error) {
	if perMinute < 1 {
		return 0, fmt.Errorf("take a rate-limit token: perMinute %d is not positive", perMinute)
	}
	every := time.Minute / time.Duration(perMinute)
	full := now.Add(-time.Minute) // the empty_at of a full bucket (perMinute × every)
	var (
		allowed, inserted bool
		emptyAt           time.Time
	)
	err := s.pool.QueryRow(ctx, `
		INSERT INTO rate_buckets AS b (kind, key, empty_at, allowed)
		VALUES ($1, $2, $3::timestamptz + $4::interval, true)
		ON CONFLICT (kind, key) DO UPDATE SET
			empty_at = CASE WHEN greatest(b.empty_at, $3) + $4 <= $5::timestamptz
				THEN greatest(b.empty_at, $3) + $4 ELSE b.empty_at END,
			allowed = greatest(b.empty_at, $3) + $4 <= $5
		RETURNING allowed, empty_at, xmax = 0`,
		kind, key, full, every, now).Scan(&allowed, &emptyAt, &inserted)
	if err != nil {
		return 0, fmt.Errorf("take a rate-limit token: %w", err)
	}
	if inserted {
		// A new bucket: a good moment to forget buckets long full again,
		// which are the same as none. The hour allows for instances whose
		// clocks disagree.
		if _, err := s.pool.Exec(ctx, `DELETE FROM rate_buckets WHERE empty_at < $1`, now.Add(-time.Hour)); err != nil {
			return 0, fmt.Errorf("purge rate-limit buckets: %w", err)
		}
	}
	if allowed {
		return 0, nil
	}
	return emptyAt.Add(every).Sub(now), nil
}
