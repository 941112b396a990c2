package store

import "context"

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

// SendsInTurn counts s's sends to room that hold or wait for the room's
// turn (turns); RateTakesInTurn those of a rate bucket.
func SendsInTurn(s *Store, room string) int { return s.turns.users(roomTurn(room)) }

func RateTakesInTurn(s *Store, kind, key string) int { return s.turns.users(rateTurn(kind, key)) }

func (t *turns) users(row string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tn := t.rows[row]; tn != nil {
		return tn.users
	}
	return 0
}
