package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/wire"
)

// Access that holds over time. The gate (pass) lets a request in once; a
// connection that stays open (an event stream, a parked long-poll) is on
// a leash: it runs the gate again when told that something changed, and
// a stream also every letagents.AccessRecheck, which catches what nobody
// told us (GitHub's cached answer aging out). It is told by a ring on the
// access channels of its caller's account and of its room, or of the
// repository that guards the room; the store rings them with the change
// (a sign-out, an agent session ended, a sign-in, an invite code rotated,
// InvalidateRepoAccess). A ring is only a hint: the check reads
// everything anew, as a new request would.

// leash is an open connection's hold on the access it was let in with.
type leash struct {
	s *server
	r *http.Request // the request as the gate let it in
	c call
	// session: it was opened with agent session credentials, which must
	// stay good. sameCaller: its credential must go on signing the same
	// account in (a stream, which speaks for whoever opened it).
	session, sameCaller bool
	// checked is when access was last found to hold, on the server's
	// clock; held says the last check could not tell, and nothing is
	// sent until one can.
	checked time.Time
	held    bool
	// told rings when the store was told of a change to this caller's
	// access (a stream's; nil for a wait, which checks at its end).
	told <-chan struct{}
}

// leash puts the connection of request r, let into c by the gate, on a
// leash (sess: opened with that agent session's credentials).
func (s *server) leash(r *http.Request, c call, sess *letagents.AgentSession, sameCaller bool) *leash {
	return &leash{s: s, r: r, c: c, session: sess != nil, sameCaller: sameCaller, checked: s.now()}
}

// channels are the access channels whose ring makes the connection check.
func (l *leash) channels() []string {
	var names []string
	if who := identity(l.r); who.SignedIn() {
		names = append(names, l.s.Store.AccountAccessChannel(who.Account.ID))
	}
	if l.c.access.Repo != "" {
		return append(names, l.s.Store.RepoAccessChannel(l.c.access.Repo))
	}
	return append(names, l.s.Store.RoomAccessChannel(l.c.room))
}

// due says whether a stream should check again though nobody told it to.
func (l *leash) due() bool {
	return l.held || l.s.now().Sub(l.checked) >= letagents.AccessRecheck
}

// revocation is a check's finding that the caller may no longer use the
// room: why (a wire.Revoked… reason) and the error a new request would
// get, which it unwraps to, so that a parked poll answers with it.
type revocation struct {
	reason string
	err    *letagents.Error
}

func (v *revocation) Error() string { return "access revoked (" + v.reason + "): " + v.err.Message }

func (v *revocation) Unwrap() error { return v.err }

// event is the access_revoked event that ends a stream.
func (v *revocation) event() event {
	body := clientErrorBody(v.err)
	body["reason"], body["status"] = v.reason, statusOf[v.err.Kind]
	return event{name: wire.EventAccessRevoked, data: body}
}

// check runs again what let the connection in: the credential, the
// room's gate as the caller is now, the room id (an invite code may have
// rotated) and the agent session. It returns nil when access holds, a
// *revocation when it no longer does, and any other error when it could
// not tell (the database or GitHub did not answer).
func (l *leash) check(ctx context.Context) error {
	was := identity(l.r)
	who, err := l.s.identify(ctx, l.r)
	if err != nil {
		return err
	}
	if l.sameCaller && was.SignedIn() && (who.Account.ID != was.Account.ID || who.Via != was.Via || who.CredentialID != was.CredentialID) {
		return &revocation{wire.RevokedSignedOut, &letagents.Error{Kind: letagents.Unauthorized, Code: letagents.CodeNotAuthenticated,
			Message: "The credential this stream was opened with no longer signs anyone in (signed out, or expired); reconnect."}}
	}
	r := l.r.WithContext(withIdentity(ctx, who))
	c, err := l.s.pass(r, member, l.c.ps)
	if err != nil {
		return revoked(wire.RevokedAccessLost, err)
	}
	if c.room != l.c.room {
		return &revocation{wire.RevokedRoomGone, letagents.RoomNotFound()}
	}
	if rooms.KindOf(l.c.room) == letagents.RoomInvite {
		if _, err := l.s.Store.Room(ctx, l.c.room); err != nil {
			return revoked(wire.RevokedRoomGone, err)
		}
	}
	if l.session {
		if _, err := l.s.agentSession(r, l.c.room, wire.SessionCredentials{}, false); err != nil {
			return revoked(wire.RevokedSessionEnded, err)
		}
	}
	l.checked, l.held = l.s.now(), false
	return nil
}

// revoked is err as a revocation for reason when it refuses the caller
// (a client error other than a rate), else err itself: the check could
// not tell.
func revoked(reason string, err error) error {
	var e *letagents.Error
	if errors.As(err, &e) && e.Kind != letagents.RateLimited {
		if status := statusOf[e.Kind]; status >= 400 && status < 500 {
			return &revocation{reason, e}
		}
	}
	return err
}
