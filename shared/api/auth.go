package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/wire"
)

func toAccount(a letagents.Account) wire.Account {
	return wire.Account{ID: letagents.WireID(letagents.AccountPrefix, a.ID), Provider: a.Provider,
		ProviderUserID: a.ProviderUserID, Login: a.Login, DisplayName: a.DisplayName, AvatarURL: optText(a.AvatarURL)}
}

func seconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

// startDevice begins a device sign-in. The room, optional, comes from the
// body or from ?room_id (the device_flow_url of an auth_required answer).
func (s *server) startDevice(w http.ResponseWriter, r *http.Request, _ call) error {
	var req wire.DeviceStartRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, &req); err != nil {
			return err
		}
	}
	if req.RoomID == "" {
		req.RoomID = r.URL.Query().Get("room_id")
	}
	if req.RoomID != "" {
		id, err := rooms.Normalize(req.RoomID)
		if err != nil {
			return letagents.Errorf(letagents.Invalid, "room_id: %v", err)
		}
		req.RoomID = id
	}
	d, err := s.Auth.StartDevice(r.Context(), clientAddress(r), req.RoomID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, wire.DeviceStart{RequestID: d.RequestID, UserCode: d.UserCode,
		VerificationURI: d.VerificationURI, ExpiresIn: seconds(d.ExpiresIn), Interval: seconds(d.Interval)})
	return nil
}

// pollDevice reports a device sign-in's progress. Denied and expired flows
// answer 403 and 410 with their status (and an error for people), as
// existing clients expect.
func (s *server) pollDevice(w http.ResponseWriter, r *http.Request, c call) error {
	p, err := s.Auth.PollDevice(r.Context(), c.ps["request_id"])
	if err != nil {
		return err
	}
	switch p.Status {
	case letagents.DeviceDenied:
		writeJSON(w, http.StatusForbidden, wire.DevicePoll{Status: p.Status, Error: "The GitHub sign-in was denied"})
	case letagents.DeviceExpired:
		writeJSON(w, http.StatusGone, wire.DevicePoll{Status: p.Status, Error: "The device sign-in expired; start a new one"})
	case letagents.DeviceAuthorized:
		j := wire.DeviceAuthorized{Status: p.Status, LetAgentsToken: p.Token,
			OwnerTokenID: letagents.WireID(letagents.OwnerTokenPrefix, p.TokenID), Account: toAccount(p.Account)}
		if !p.TokenExpiresAt.IsZero() {
			ts := letagents.FormatTime(p.TokenExpiresAt)
			j.OAuthTokenExpiresAt = &ts
		}
		writeJSON(w, http.StatusOK, j)
	default:
		in := seconds(p.ExpiresIn)
		writeJSON(w, http.StatusOK, wire.DevicePoll{Status: p.Status, Interval: seconds(p.Interval), ExpiresIn: &in})
	}
	return nil
}

func (s *server) callbackURL(r *http.Request) string { return s.baseURL(r) + "/auth/github/callback" }

func (s *server) githubLogin(w http.ResponseWriter, r *http.Request, _ call) error {
	var req wire.LoginRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, &req); err != nil {
			return err
		}
	}
	l, err := s.Auth.BeginLogin(r.Context(), req.RedirectTo, s.callbackURL(r))
	if err != nil {
		return err
	}
	setLoginCookie(w, l.BrowserNonce, int(auth.StateTTL/time.Second), s.secure(r))
	writeJSON(w, http.StatusOK, wire.Login{AuthURL: l.AuthURL, State: l.State, RedirectTo: l.RedirectTo})
	return nil
}

// setLoginCookie gives the browser the nonce its sign-in is bound to. Only
// the callback needs it; Lax still sends it on the top-level navigation
// back from GitHub.
func setLoginCookie(w http.ResponseWriter, nonce string, maxAge int, secure bool) {
	http.SetCookie(w, &http.Cookie{Name: auth.LoginCookie, Value: nonce, Path: "/auth/github", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: secure})
}

// githubCallback finishes a web sign-in started by this browser (its
// login cookie, spent either way, must match the state): the session
// cookie is set and the browser goes where the sign-in began (a client
// asking for JSON gets the account instead).
func (s *server) githubCallback(w http.ResponseWriter, r *http.Request, _ call) error {
	var nonce string
	if ck, err := r.Cookie(auth.LoginCookie); err == nil {
		nonce = ck.Value
	}
	setLoginCookie(w, "", -1, s.secure(r))
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		return letagents.Errorf(letagents.Invalid, "GitHub sign-in did not complete (%s)", e)
	}
	l, err := s.Auth.FinishLogin(r.Context(), q.Get("code"), q.Get("state"), nonce, s.callbackURL(r))
	if err != nil {
		return err
	}
	setSessionCookie(w, l.SessionToken, int(auth.SessionTTL/time.Second), s.secure(r))
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		acct := toAccount(l.Account)
		writeJSON(w, http.StatusOK, wire.Session{Authenticated: true, Account: &acct, SignInConfigured: true})
		return nil
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, l.RedirectTo, http.StatusFound)
	return nil
}

func (s *server) session(w http.ResponseWriter, r *http.Request, _ call) error {
	who := identity(r)
	j := wire.Session{SignInConfigured: s.Auth.SignInConfigured()}
	if who.SignedIn() {
		acct := toAccount(who.Account)
		j.Authenticated, j.Account, j.LocalOwner = true, &acct, who.Via == auth.ViaLocal
	}
	writeJSON(w, http.StatusOK, j)
	return nil
}

// logout ends the browser session (and clears its cookie); an owner token
// sent along is left alone, as the original service leaves it.
func (s *server) logout(w http.ResponseWriter, r *http.Request, _ call) error {
	if err := s.Auth.SignOut(r.Context(), identity(r)); err != nil {
		return err
	}
	clearSessionCookie(w, s.secure(r))
	writeJSON(w, http.StatusOK, wire.Success{Success: true})
	return nil
}

// requireAccount refuses anonymous callers (see auth.Identity.NotSignedIn).
func requireAccount(who auth.Identity) error {
	if who.SignedIn() {
		return nil
	}
	return who.NotSignedIn("Authentication required")
}
