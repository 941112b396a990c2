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
	err := s.pool.QueryRow(ctx, takeSQL(1, "true"), kind, key, full, every, now).Scan(&allowed, &emptyAt, &inserted)
	if err != nil {
		return 0, fmt.Errorf("take a rate-limit token: %w", err)
	}
	if inserted {
		// A new bucket: a good moment to forget buckets long full again.
		if _, err := s.pool.Exec(ctx, `DELETE FROM rate_buckets WHERE empty_at < $1`, now.Add(-staleBuckets)); err != nil {
			return 0, fmt.Errorf("purge rate-limit buckets: %w", err)
		}
	}
	return takeWait(allowed, emptyAt, every, now), nil
}

// takeSQL takes a token (Take) when cond holds, with the bucket's kind,
// key, the empty_at of a full bucket, the interval between tokens and now
// in the five parameters from $first on; it returns allowed, empty_at and
// inserted (a new bucket).
func takeSQL(first int, cond string) string {
	p := func(i int) string { return fmt.Sprintf("$%d", first+i) }
	kind, key, full, every, now := p(0), p(1), p(2)+"::timestamptz", p(3)+"::interval", p(4)+"::timestamptz"
	return `
		INSERT INTO rate_buckets AS b (kind, key, empty_at, allowed)
		SELECT ` + kind + `, ` + key + `, ` + full + ` + ` + every + `, true WHERE ` + cond + `
		ON CONFLICT (kind, key) DO UPDATE SET
			empty_at = CASE WHEN greatest(b.empty_at, ` + full + `) + ` + every + ` <= ` + now + `
				THEN greatest(b.empty_at, ` + full + `) + ` + every + ` ELSE b.empty_at END,
			allowed = greatest(b.empty_at, ` + full + `) + ` + every + ` <= ` + now + `
		RETURNING allowed, empty_at, xmax = 0 AS inserted`
}

// takeWait is Take's answer from what takeSQL returned: 0 when a token
// was taken, else how long until one will be there.
func takeWait(allowed bool, emptyAt time.Time, every time.Duration, now time.Time) time.Duration {
	if allowed {
		return 0
	}
	return emptyAt.Add(every).Sub(now)
}

// staleBuckets is how long after its bucket is full again a take's
// bucket is forgotten: it is then the same as none, and the hour allows
// for instances whose clocks disagree.
const staleBuckets = time.Hour
