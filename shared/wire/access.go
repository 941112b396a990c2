package wire

// Reasons of an access_revoked event.
const (
	// RevokedSignedOut: the credential the stream was opened with no
	// longer signs its account in (a sign-out, an expired session).
	RevokedSignedOut = "signed_out"
	// RevokedSessionEnded: the agent session whose credentials the stream
	// was opened with has ended (disconnected, or timed out).
	RevokedSessionEnded = "session_ended"
	// RevokedAccessLost: the room's gate now refuses the caller (GitHub
	// no longer lets the account see the repository, say).
	RevokedAccessLost = "access_lost"
	// RevokedRoomGone: the room id no longer names the room (its invite
	// code was rotated).
	RevokedRoomGone = "room_gone"
)
