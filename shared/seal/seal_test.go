package seal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kms"
)

// sealers returns one Sealer of each kind, with a second Sealer of the same
// kind under another key.
func sealers(t *testing.T) []struct {
	name         string
	sealer       Sealer
	otherKey     Sealer
	otherKeyName string
} {
	t.Helper()
	key, err := NewKey(randomKey(t))
	if err != nil {
		t.Fatalf("NewKey: %v", err)
	}
	otherKey, err := NewKey(randomKey(t))
	if err != nil {
		t.Fatalf("NewKey: %v", err)
	}
	f := newFakeKMS(t, "alias/seal")
	return []struct {
		name         string
		sealer       Sealer
		otherKey     Sealer
		otherKeyName string
	}{
		{"key", key, otherKey, "another key"},
		{"kms", NewKMS(f, f.keyID), NewKMS(newFakeKMS(t, f.keyID), f.keyID), "another KMS master key"},
		{"kms key id", NewKMS(f, f.keyID), NewKMS(f, "alias/other"), "another KMS key ID"},
	}
}

func mustSeal(t *testing.T, s Sealer, plaintext, aad []byte) []byte {
	t.Helper()
	sealed, err := s.Seal(context.Background(), plaintext, aad)
	if err != nil {
		t.Fatalf("Seal(%q, %q): %v", plaintext, aad, err)
	}
	return sealed
}

func TestNewKeyLength(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 16, 24, 31, 33, 64} {
		if _, err := NewKey(make([]byte, n)); err == nil {
			t.Errorf("NewKey(%d bytes): got nil error, want one", n)
		}
	}
	if _, err := NewKey(make([]byte, 32)); err != nil {
		t.Errorf("NewKey(32 bytes): %v", err)
	}
}

func TestNewKeyCopiesKey(t *testing.T) {
	t.Parallel()
	key := randomKey(t)
	s, err := NewKey(key)
	if err != nil {
		t.Fatalf("NewKey: %v", err)
	}
	sealed := mustSeal(t, s, []byte("secret"), nil)
	clear(key)
	if _, err := s.Open(context.Background(), sealed, nil); err != nil {
		t.Errorf("Open after clearing the caller's key slice: %v", err)
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	plaintexts := []struct {
		name string
		text []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"token", []byte("gho_16C7e42F292c6912E7710c838347Ae178B4a")},
		{"4KiB", bytes.Repeat([]byte{0xa5}, 4096)},
	}
	aads := [][]byte{nil, []byte("github_token:acct_12")}
	for _, s := range sealers(t) {
		for _, p := range plaintexts {
			for _, aad := range aads {
				t.Run(fmt.Sprintf("%s/%s/aad=%q", s.name, p.name, aad), func(t *testing.T) {
					ctx := context.Background()
					sealed := mustSeal(t, s.sealer, p.text, aad)
					if bytes.Contains(sealed, p.text) && len(p.text) > 0 {
						t.Errorf("sealed value contains the plaintext")
					}
					got, err := s.sealer.Open(ctx, sealed, aad)
					if err != nil {
						t.Fatalf("Open: %v", err)
					}
					if !bytes.Equal(got, p.text) {
						t.Errorf("Open: got %q, want %q", got, p.text)
					}
					// Random nonces: the same plaintext seals differently.
					if again := mustSeal(t, s.sealer, p.text, aad); bytes.Equal(again, sealed) {
						t.Errorf("two Seals of the same plaintext gave the same bytes")
					}
				})
			}
		}
	}
}

func TestWireFormat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plaintext := []byte("secret")

	key, err := NewKey(randomKey(t))
	if err != nil {
		t.Fatalf("NewKey: %v", err)
	}
	sealed := mustSeal(t, key, plaintext, nil)
	if got, want := sealed[0], byte(0x01); got != want {
		t.Errorf("key file version byte: got %#02x, want %#02x", got, want)
	}
	if got, want := len(sealed), 1+12+len(plaintext)+16; got != want {
		t.Errorf("key file sealed length: got %d, want %d", got, want)
	}

	f := newFakeKMS(t, "alias/seal")
	sealed = mustSeal(t, NewKMS(f, f.keyID), plaintext, nil)
	if got, want := sealed[0], byte(0x02); got != want {
		t.Errorf("kms version byte: got %#02x, want %#02x", got, want)
	}
	n := int(sealed[1])<<8 | int(sealed[2])
	if got, want := len(sealed), 3+n+12+len(plaintext)+16; got != want {
		t.Fatalf("kms sealed length: got %d, want %d (wrapped key length %d)", got, want, n)
	}
	out, err := f.Decrypt(ctx, &kms.DecryptInput{
		CiphertextBlob:    sealed[3 : 3+n],
		KeyId:             &f.keyID,
		EncryptionContext: map[string]string{"purpose": "letagents-seal"},
	})
	if err != nil {
		t.Fatalf("kms wrapped key does not decrypt: %v", err)
	}
	if got, want := len(out.Plaintext), 32; got != want {
		t.Errorf("kms data key length: got %d, want %d", got, want)
	}
}

func TestTamperEachByte(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, s := range sealers(t) {
		t.Run(s.name, func(t *testing.T) {
			aad := []byte("github_token:acct_12")
			sealed := mustSeal(t, s.sealer, []byte("gho_secret"), aad)
			for i := range sealed {
				for _, flip := range []byte{0x01, 0x80, 0xff} {
					tampered := bytes.Clone(sealed)
					tampered[i] ^= flip
					got, err := s.sealer.Open(ctx, tampered, aad)
					if !errors.Is(err, ErrCorrupt) {
						t.Errorf("Open with byte %d ^ %#02x: got (%q, %v), want ErrCorrupt", i, flip, got, err)
					}
				}
			}
			// Appending bytes is tampering too.
			if _, err := s.sealer.Open(ctx, append(bytes.Clone(sealed), 0), aad); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Open with a byte appended: got %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestTruncated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, s := range sealers(t) {
		t.Run(s.name, func(t *testing.T) {
			sealed := mustSeal(t, s.sealer, []byte("gho_secret"), nil)
			for n := range len(sealed) {
				if got, err := s.sealer.Open(ctx, sealed[:n], nil); !errors.Is(err, ErrCorrupt) {
					t.Errorf("Open of the first %d of %d bytes: got (%q, %v), want ErrCorrupt", n, len(sealed), got, err)
				}
			}
		})
	}
}

func TestWrongAAD(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, s := range sealers(t) {
		t.Run(s.name, func(t *testing.T) {
			sealed := mustSeal(t, s.sealer, []byte("gho_secret"), []byte("github_token:acct_12"))
			for _, aad := range []string{"", "github_token:acct_1", "github_token:acct_120", "device_code:acct_12"} {
				if got, err := s.sealer.Open(ctx, sealed, []byte(aad)); !errors.Is(err, ErrCorrupt) {
					t.Errorf("Open with aad %q: got (%q, %v), want ErrCorrupt", aad, got, err)
				}
			}
		})
	}
}

func TestWrongKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, s := range sealers(t) {
		t.Run(s.name, func(t *testing.T) {
			sealed := mustSeal(t, s.sealer, []byte("gho_secret"), nil)
			if got, err := s.otherKey.Open(ctx, sealed, nil); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Open under %s: got (%q, %v), want ErrCorrupt", s.otherKeyName, got, err)
			}
		})
	}
}

func TestCrossKind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key, err := NewKey(randomKey(t))
	if err != nil {
		t.Fatalf("NewKey: %v", err)
	}
	f := newFakeKMS(t, "alias/seal")
	kmsSealer := NewKMS(f, f.keyID)

	tests := []struct {
		name       string
		seal, open Sealer
	}{
		{"key file value opened by kms", key, kmsSealer},
		{"kms value opened by key file", kmsSealer, key},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sealed := mustSeal(t, tt.seal, []byte("gho_secret"), nil)
			if got, err := tt.open.Open(ctx, sealed, nil); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Open: got (%q, %v), want ErrCorrupt", got, err)
			}
		})
	}
}

func TestOpenMalformed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, s := range sealers(t) {
		for _, in := range malformedSeeds() {
			if got, err := s.sealer.Open(ctx, in, nil); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: Open(%x): got (%q, %v), want ErrCorrupt", s.name, in, got, err)
			}
		}
	}
}

// malformedSeeds are inputs no Sealer should open.
func malformedSeeds() [][]byte {
	return [][]byte{
		nil,
		{},
		{0x00},
		{0x01},
		{0x02},
		{0x03, 0x00},
		{0x02, 0x00, 0x00},
		{0x02, 0xff, 0xff},
		append([]byte{0x02, 0x00, 0x00}, make([]byte, 40)...),
		append([]byte{0x02, 0x00, 0x01}, make([]byte, 40)...),
		append([]byte{0x02, 0xff, 0xff}, make([]byte, 40)...),
		make([]byte, 1+12+16),
		append([]byte{0x01}, make([]byte, 12+16)...),
		append([]byte{0x01}, make([]byte, 12+15)...),
	}
}

// FuzzOpen checks that Open of arbitrary bytes never panics and fails only
// with ErrCorrupt (the fake KMS is always reachable).
func FuzzOpen(f *testing.F) {
	ctx := context.Background()
	key, err := NewKey(randomKey(f))
	if err != nil {
		f.Fatalf("NewKey: %v", err)
	}
	fk := newFakeKMS(f, "alias/seal")
	kmsSealer := NewKMS(fk, fk.keyID)
	plaintext, aad := []byte("gho_secret"), []byte("github_token:acct_12")

	for _, s := range []Sealer{key, kmsSealer} {
		sealed, err := s.Seal(ctx, plaintext, aad)
		if err != nil {
			f.Fatalf("Seal: %v", err)
		}
		f.Add(sealed)
		f.Add(sealed[:len(sealed)-1])
	}
	for _, seed := range malformedSeeds() {
		f.Add(seed)
	}

	f.Fuzz(func(t *testing.T, in []byte) {
		for _, s := range []Sealer{key, kmsSealer} {
			got, err := s.Open(ctx, in, aad)
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Errorf("Open(%x): got error %v, want ErrCorrupt", in, err)
			}
			if err == nil && !bytes.Equal(got, plaintext) {
				t.Errorf("Open(%x): got %q, want an error or %q", in, got, plaintext)
			}
		}
	})
}
