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
	kind, key, full, every, now := takeParams(first)
	return `
		INSERT INTO rate_buckets AS b (kind, key, empty_at, allowed)
		SELECT ` + kind + `, ` + key + `, ` + full + ` + ` + every + `, true WHERE ` + cond + `
		ON CONFLICT (kind, key) DO UPDATE SET ` + takeSet("b", full, every, now) + `
		RETURNING allowed, empty_at, xmax = 0 AS inserted`
}

// takeUnlessBusySQL is takeSQL as common table expressions for a
// statement that does more than take, ending in one named take: it holds
// no row, taking nothing, when the bucket does not exist yet or another
// transaction holds its row. A statement that took the token holds the
// row until it commits, so a take that waited would have every send from
// one address take turns through the whole send; the caller takes the
// token on its own then (Take), which holds the row only for the take
// and creates the bucket.
func takeUnlessBusySQL(first int, cond string) string {
	kind, key, full, every, now := takeParams(first)
	return `free_bucket AS (
			SELECT kind, key FROM rate_buckets WHERE ` + cond + ` AND kind = ` + kind + ` AND key = ` + key + `
			FOR UPDATE SKIP LOCKED
		), take AS (
			UPDATE rate_buckets b SET ` + takeSet("b", full, every, now) + `
			FROM free_bucket f WHERE b.kind = f.kind AND b.key = f.key
			RETURNING b.allowed, b.empty_at
		)`
}

// takeParams are the SQL of takeSQL's five parameters from $first on.
func takeParams(first int) (kind, key, full, every, now string) {
	p := func(i int) string { return fmt.Sprintf("$%d", first+i) }
	return p(0), p(1), p(2) + "::timestamptz", p(3) + "::interval", p(4) + "::timestamptz"
}

// takeSet is the SET of a take from bucket row b: a token is there when
// the bucket was empty (or full) one interval ago.
func takeSet(b, full, every, now string) string {
	next := `greatest(` + b + `.empty_at, ` + full + `) + ` + every
	return `
			empty_at = CASE WHEN ` + next + ` <= ` + now + ` THEN ` + next + ` ELSE ` + b + `.empty_at END,
			allowed = ` + next + ` <= ` + now
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
