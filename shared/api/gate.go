package api

import (
	"net/http"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
)

// gate is what a route needs of its caller in the room of its path; the
// route table declares one per route and the router applies it before the
// handler runs, so no handler can forget it.
//
// Reading and writing a room need the same: whoever the access gate
// (auth.Gate) lets in may do both. What a worker session may do is not a
// gate: its credentials ride in the JSON body, which handlers decode after
// the gate (and, for presence, check before the session), so the handlers
// ask for it (requireWorker, agentSession).
type gate uint8

const (
	// undeclared is the zero gate; the table refuses it (checkGates).
	undeclared gate = iota
	// public routes show no room's data: anyone may call them, and their
	// handlers check whatever else they need (a signed-in account, say).
	public
	// member: the caller may use the room (auth.Gate). The room need not
	// exist: what the handler reads answers 404 for one that does not.
	member
	// sender is member, counting the request against the client's send
	// rate, which counts refused sends too: the send's own statement
	// takes the token (store.Send), and a send refused before it takes
	// one then (refuseSend), so that the rate's 429 still comes first.
	sender
	// joiner is member after counting the request against the client's
	// join rate, and the gate also asks for the caller's GitHub admin bit.
	// The room need not exist: a join creates it.
	joiner
	// opener is joiner without the join rate: the legacy route that opens
	// a named room, which the original service does not count.
	opener
	// admin is member, of a room that exists, for a signed-in admin of it
	// (401 without an account, 403 for anyone else).
	admin
)

// pass runs gate g for a request whose path captured ps: the room of the
// path, normalised and resolved (an invite-shaped id that no invite room
// has names a named room: Store.RoomID), and the caller's access to it;
// or the refusal, which is one of 400 (bad room id), 429 (a rate), 401
// auth_required, 403 private_repo_no_access and, for admin, 404 (no such
// room), 401 and 403.
func (s *server) pass(r *http.Request, g gate, ps params) (call, error) {
	c, err := s.passRoom(r, g, ps)
	if err != nil && g == sender {
		err = s.refuseSend(r, err)
	}
	return c, err
}

// passRoom is pass but for the send rate of a refused send.
func (s *server) passRoom(r *http.Request, g gate, ps params) (call, error) {
	c := call{ps: ps}
	switch g {
	case public:
		return c, nil
	case joiner:
		if err := s.Auth.LimitJoin(r.Context(), clientAddress(r)); err != nil {
			return c, err
		}
	}
	id, err := roomParam(ps)
	if err != nil {
		return c, err
	}
	if c.room, _, err = s.Store.RoomID(r.Context(), id); err != nil {
		return c, err
	}
	if s.Auth.GateAsks(c.room) {
		if err := s.resolve(r); err != nil {
			return c, err
		}
	}
	c.access, err = s.Auth.Gate(r.Context(), identity(r), c.room, s.baseURL(r), g == joiner || g == opener)
	if err != nil || g != admin {
		return c, err
	}
	_, role, err := s.roleIn(r, c)
	if err == nil {
		err = requireAdmin(identity(r), role)
	}
	return c, err
}

// roleIn reads the room the gate let the caller into, which must exist,
// and the caller's role in it.
func (s *server) roleIn(r *http.Request, c call) (letagents.Room, letagents.Role, error) {
	room, err := s.Store.Room(r.Context(), c.room)
	if err != nil {
		return room, "", err
	}
	role, err := s.Auth.Role(r.Context(), identity(r), room, c.access, false)
	return room, role, err
}

// requireAdmin refuses callers who are not admins of the room.
func requireAdmin(who auth.Identity, role letagents.Role) error {
	if err := requireAccount(who); err != nil {
		return err
	}
	if role != letagents.RoleAdmin {
		return letagents.AdminRequired()
	}
	return nil
}
