// Package seal owns encryption at rest for the small secrets the service
// must read back later (GitHub access tokens, GitHub device codes): sealing
// them before they are stored and opening them after they are read.
//
// Two kinds of Sealer exist. NewKMS uses AWS KMS envelope encryption, for
// deployed functions: a KMS data key encrypts the values, and KMS holds the
// key that wraps the data key. NewKeyFile (and NewKey) use one local key,
// for development.
//
// # Wire format
//
// Every sealed value starts with a version byte that says which kind sealed
// it; the rest is AES-256-GCM with a random 12-byte nonce:
//
//	key file (0x01): 0x01 | nonce (12) | ciphertext | tag (16)
//	KMS      (0x02): 0x02 | n (2, big-endian) | wrapped data key (n) | nonce (12) | ciphertext | tag (16)
//
// The header (everything before the nonce: the version byte and, for KMS,
// the length and the wrapped data key) is authenticated too: GCM's
// additional data is header || aad. So changing any byte, moving a value to
// a row with another aad, or handing one kind's value to the other kind
// makes Open fail with ErrCorrupt. The header is self-delimiting, so no two
// (header, aad) pairs give the same additional data.
//
// Random 96-bit nonces are safe for about 2^32 seals per key; the KMS
// Sealer changes data keys long before that (see NewKMS). The key-file key
// is never changed, which is acceptable for local development only.
package seal

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"fmt"
)

// Sealer encrypts small secrets for storage in the database. aad
// (associated data) binds a sealed value to where it is stored (e.g.
// "github_token:acct_12"), so a value copied to another row does not open.
// Implementations are safe for concurrent use.
type Sealer interface {
	// Seal encrypts plaintext, which may be empty, bound to aad.
	Seal(ctx context.Context, plaintext, aad []byte) ([]byte, error)
	// Open decrypts a value from Seal given the same aad. Anything else
	// fails with an error matching ErrCorrupt.
	Open(ctx context.Context, sealed, aad []byte) ([]byte, error)
}

// ErrCorrupt is matched (errors.Is) by the error from Open for a value that
// was tampered with, truncated, opened with the wrong aad, or sealed under
// another key or by the other kind of Sealer. Failures to reach the key
// service do not match it, so callers can tell "try again later" from
// "this value will never open".
var ErrCorrupt = errors.New("seal: sealed value is corrupt or belongs to another key or aad")

// Wire-format constants; see the package comment.
const (
	versionKey = 0x01
	versionKMS = 0x02

	keySize   = 32 // AES-256
	nonceSize = 12
	tagSize   = 16
)

// NewKey returns a Sealer using key, which must be 32 bytes (AES-256-GCM).
// The key is copied.
func NewKey(key []byte) (Sealer, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	return keySealer{aead: aead}, nil
}

// newAEAD returns AES-256-GCM that draws a random nonce for every Seal and
// puts it before the ciphertext, as the wire format wants.
func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != keySize {
		return nil, fmt.Errorf("seal: key is %d bytes, want %d", len(key), keySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("seal: new cipher: %w", err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("seal: new gcm: %w", err)
	}
	return aead, nil
}

// keySealer seals with one fixed key (format 0x01).
type keySealer struct {
	aead cipher.AEAD
}

var keyHeader = []byte{versionKey}

// Seal implements Sealer. It does no I/O, so ctx is unused.
func (s keySealer) Seal(_ context.Context, plaintext, aad []byte) ([]byte, error) {
	return sealWith(s.aead, keyHeader, plaintext, aad), nil
}

// Open implements Sealer. It does no I/O, so ctx is unused.
func (s keySealer) Open(_ context.Context, sealed, aad []byte) ([]byte, error) {
	if len(sealed) < len(keyHeader)+nonceSize+tagSize {
		return nil, fmt.Errorf("%w: %d bytes is too short", ErrCorrupt, len(sealed))
	}
	if sealed[0] != versionKey {
		return nil, fmt.Errorf("%w: version byte %#02x, want %#02x", ErrCorrupt, sealed[0], versionKey)
	}
	return openWith(s.aead, keyHeader, sealed[len(keyHeader):], aad)
}

// sealWith returns header | nonce | ciphertext | tag, authenticating header
// and aad.
func sealWith(aead cipher.AEAD, header, plaintext, aad []byte) []byte {
	out := make([]byte, len(header), len(header)+nonceSize+len(plaintext)+tagSize)
	copy(out, header)
	return aead.Seal(out, nil, plaintext, additionalData(header, aad))
}

// openWith opens body (nonce | ciphertext | tag) that followed header.
func openWith(aead cipher.AEAD, header, body, aad []byte) ([]byte, error) {
	plaintext, err := aead.Open(nil, nil, body, additionalData(header, aad))
	if err != nil {
		// GCM says only "message authentication failed"; which of
		// tampering, wrong aad or wrong key cannot be told apart.
		return nil, fmt.Errorf("%w: authentication failed", ErrCorrupt)
	}
	return plaintext, nil
}

// additionalData returns header || aad in a new slice, so that it never
// overlaps the output buffer (GCM refuses that).
func additionalData(header, aad []byte) []byte {
	ad := make([]byte, 0, len(header)+len(aad))
	ad = append(ad, header...)
	return append(ad, aad...)
}
