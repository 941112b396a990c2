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
