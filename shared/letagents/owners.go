package letagents

import "errors"

// Work in a room that one account makes (a reasoning session, an
// artifact) is changed only by that account, through any of its
// credentials: its worker sessions, its token, its browser. Work made by
// nobody signed in proves no one's authorship, and whoever may use the
// room may change it, as before owners were kept.

// CodeNotOwner is the code of a refusal to change work another account
// made.
const CodeNotOwner = "NOT_OWNER"

// MayChange reports whether the account caller (0 for nobody signed in)
// may change work that the account owner made (0 for nobody signed in).
func MayChange(owner, caller int64) bool { return owner == 0 || owner == caller }

// NotOwner is the refusal to change work another account made; message
// says whose work it is and who else may change it.
func NotOwner(message string) error {
	return &Error{Kind: Forbidden, Code: CodeNotOwner, Message: message}
}

// IsNotOwner reports whether err is, or wraps, a NotOwner refusal.
func IsNotOwner(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == CodeNotOwner
}
