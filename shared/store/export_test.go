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

// SendsInTurn counts s's sends to room that are in the database as the
// room's batch or wait for the room's turn (turns); RateTakesInTurn
// those that hold or wait for a rate bucket's.
func SendsInTurn(s *Store, room string) int {
	s.turns.mu.Lock()
	defer s.turns.mu.Unlock()
	if r := s.turns.rooms[room]; r != nil {
		return r.running + len(r.queue)
	}
	return 0
}

func RateTakesInTurn(s *Store, kind, key string) int {
	s.turns.mu.Lock()
	defer s.turns.mu.Unlock()
	if tn := s.turns.rates[rateKey(kind, key)]; tn != nil {
		return tn.users
	}
	return 0
}
