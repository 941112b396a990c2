// Package auth owns who a request comes from and what it may do: tokens
// (random, shown once, stored as SHA-256), reading credentials from a
// request, the GitHub device and web sign-in flows, and the room access
// decision (repo rooms follow GitHub's visibility and collaborators).
// Every piece of state it keeps is in Postgres, through shared/store, so
// any function instance may serve any step.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
)

// tokenBytes is the entropy of every token and request id we mint.
const tokenBytes = 32

// NewToken returns a fresh random token: 32 bytes as 64 hex characters.
// crypto/rand never fails on the platforms Go supports (it panics
// internally rather than return short), so there is no error to handle.
func NewToken() string {
	b := make([]byte, tokenBytes)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// HashToken is the form a token is stored and looked up in.
func HashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}
