package store

import (
	"context"
	"slices"
)

// SearchReading returns a Store on s's pool whose searches always read
// room by room (byRooms) or always through the index, so tests can hold
// both ways to the same answers.
func SearchReading(s *Store, byRooms bool) *Store {
	cp := *s
	cp.byRooms = &byRooms
	return &cp
}

// ReadsByRooms is searchByRooms: whether a search of query over rooms
// holding held messages reads them room by room.
func ReadsByRooms(ctx context.Context, s *Store, query string, held int64) (bool, error) {
	return s.searchByRooms(ctx, query, held)
}

// SendsInTurn counts s's sends to room that are in the database or wait
// to go (turns); RateTakesInTurn those that take a token from a rate
// bucket.
func SendsInTurn(s *Store, room string) int { return s.turns.usersOf(roomKey(room)) }

func RateTakesInTurn(s *Store, kind, key string) int { return s.turns.usersOf(rateKey(kind, key)) }

func (t *turns) usersOf(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	sends := t.waiting
	if b := t.holder[key]; b != nil {
		sends = append(slices.Clip(sends), b.sends...)
	}
	n := 0
	for _, rs := range sends {
		if slices.Contains(rs.rows, key) {
			n++
		}
	}
	return n
}

// SetSendLanes sets how many batches of sends s lets into the database at
// once (turns), before it sends.
func SetSendLanes(s *Store, n int) { s.turns.limit = n }

// SendPlan is the plan of ins' statement as it ran under EXPLAIN
// (ANALYZE, FORMAT JSON), in a transaction rolled back after:
// checkedSQL's variant for one send; for several, sendSetSQL's variant of
// the first send's kind on its generic plan, as a batch runs it. The
// sends take no rate token.
func SendPlan(ctx context.Context, s *Store, ins ...Send) ([]byte, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	var sql string
	var args []any
	if len(ins) == 1 {
		var unlinked bool
		args, unlinked = s.checkedArgs(ins[0])
		sql = checkedStatement(ins[0], unlinked)
	} else {
		if _, err := tx.Exec(ctx, genericPlan); err != nil {
			return nil, err
		}
		sends := make([]*Send, len(ins))
		for i := range ins {
			sends[i] = &ins[i]
		}
		sql, args = setStatement(sends[0]), s.setArgs(sends)
	}
	var plan []byte
	err = tx.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+sql, args...).Scan(&plan)
	return plan, err
}
