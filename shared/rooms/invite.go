// Package rooms owns the room-id rules shared by the LetAgents server and
// MCP client, so both sides agree on what names the same room.
package rooms

import (
	"crypto/rand"
	"fmt"
	"io"
	"strings"

	"github.com/letagents/letagents-go/shared/letagents"
)

// inviteAlphabet is upper-case only because that is the canonical form
// Normalize gives a code typed in any case.
const inviteAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// inviteLimit is the largest multiple of len(inviteAlphabet) that fits in a
// byte; bytes at or above it are rejected so every character is equally
// likely (a plain modulo would favour the first 256%36 characters).
const inviteLimit = 256 / len(inviteAlphabet) * len(inviteAlphabet)

const (
	inviteGroups   = 3
	inviteGroupLen = 4
)

// NewInviteCode returns a fresh invite code: three dash-separated groups of
// four characters drawn uniformly from A-Z0-9 with crypto/rand, e.g.
// "FEH7-YWH4-ZYT3". The code is the only secret guarding an invite room, so
// it must be unpredictable.
func NewInviteCode() (string, error) {
	return newInviteCode(rand.Reader)
}

// newInviteCode takes the randomness source as a parameter so tests can
// check the rejection sampling and the error path deterministically.
func newInviteCode(r io.Reader) (string, error) {
	const n = inviteGroups * inviteGroupLen
	code := make([]byte, 0, n+inviteGroups-1)
	buf := make([]byte, 2*n) // most draws succeed; read in batches
	drawn := 0
	for drawn < n {
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", fmt.Errorf("rooms: reading randomness for invite code: %w", err)
		}
		for _, b := range buf {
			if drawn == n {
				break
			}
			if int(b) >= inviteLimit {
				continue
			}
			if drawn > 0 && drawn%inviteGroupLen == 0 {
				code = append(code, '-')
			}
			code = append(code, inviteAlphabet[int(b)%len(inviteAlphabet)])
			drawn++
		}
	}
	return string(code), nil
}

// IsInviteCode reports whether s has the shape of an invite code: four
// alphanumerics followed by one or two groups of "-" and four alphanumerics
// (XXXX-XXXX or XXXX-XXXX-XXXX), in any case, so a code typed in lower case
// still finds its room.
func IsInviteCode(s string) bool {
	const group = inviteGroupLen + 1 // a group plus its separator
	if len(s) != 2*group-1 && len(s) != 3*group-1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i%group == inviteGroupLen {
			if s[i] != '-' {
				return false
			}
		} else if !isAlnumASCII(s[i]) {
			return false
		}
	}
	return true
}

// MayBeNamed reports whether an invite-shaped id may name a named room
// when no invite room has it as its code: only the two-group shape
// (team-chat, demo-room). Codes are minted with three groups, here as in
// LetAgents, so a three-group id that no invite room has is a mistyped or
// stale code, and is answered "Room not found" rather than opening a
// fresh room the agent would take for the one it was invited to.
func MayBeNamed(id string) bool {
	return IsInviteCode(id) && len(id) == 2*(inviteGroupLen+1)-1
}

// NamedRoomOf returns the id of the named room that an invite-shaped id
// (team-chat, demo-room) stands for when no invite room has that code: its
// lower-case form, so that the name finds one room however it is typed,
// as a code does, and never collides with a code, which is upper-case.
// An id of digits and dashes only is its own named form.
func NamedRoomOf(id string) string {
	return lowerASCII(id)
}

// ForLog is a room id as a log line may show it: an invite-shaped id is
// its room's only secret (anyone who reads it can join), so it is
// letagents.Redacted; other ids are not secret and stay readable.
func ForLog(id string) string {
	if IsInviteCode(id) {
		return letagents.Redacted(strings.ToUpper(id))
	}
	return id
}
