package auth_test

import (
	"context"
	"encoding/base64"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/seal"
	"github.com/letagents/letagents-go/shared/testclock"
)

func TestVouchedAddress(t *testing.T) {
	ctx := context.Background()
	key := func() seal.Sealer {
		s, err := seal.NewKeyFile(filepath.Join(t.TempDir(), "token.key"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sealer, otherKey := key(), key()
	clock := testclock.New(time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC))
	svc := auth.New(nil, auth.Config{Sealer: sealer, Now: clock.Now})
	v4, err := svc.VouchAddress(ctx, "203.0.113.9")
	if err != nil {
		t.Fatal(err)
	}
	v6, err := svc.VouchAddress(ctx, "2001:db8::1")
	if err != nil {
		t.Fatal(err)
	}
	elsewhere, err := auth.New(nil, auth.Config{Sealer: otherKey, Now: clock.Now}).VouchAddress(ctx, "203.0.113.9")
	if err != nil {
		t.Fatal(err)
	}
	// Another value sealed by the same key, for another use.
	raw, err := sealer.Seal(ctx, []byte("9999999999 203.0.113.9"), []byte("github_token:github:1"))
	if err != nil {
		t.Fatal(err)
	}
	otherUse := base64.RawURLEncoding.EncodeToString(raw)
	tampered := []byte(v4)
	tampered[len(tampered)/2] ^= 1

	for _, c := range []struct {
		name, value, want string
		after             time.Duration
	}{
		{name: "IPv4", value: v4, want: "203.0.113.9"},
		{name: "IPv6", value: v6, want: "2001:db8::1"},
		{name: "near the end of its life", value: v4, want: "203.0.113.9", after: 59 * time.Second},
		{name: "past its life", value: v4, after: time.Minute},
		{name: "another service's key", value: elsewhere},
		{name: "sealed for another use", value: otherUse},
		{name: "tampered", value: string(tampered)},
		{name: "not base64", value: "not a vouch!"},
		{name: "a plain address", value: "203.0.113.9"},
		{name: "empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			check := testclock.New(clock.Now().Add(c.after))
			got, ok := auth.New(nil, auth.Config{Sealer: sealer, Now: check.Now}).VouchedAddress(ctx, c.value)
			if got != c.want || ok != (c.want != "") {
				t.Errorf("VouchedAddress = %q, %v; want %q", got, ok, c.want)
			}
		})
	}

	if _, err := svc.VouchAddress(ctx, "not an address"); err == nil {
		t.Error("VouchAddress vouched for something that is not an IP address")
	}
	keyless := auth.New(nil, auth.Config{Now: clock.Now})
	if _, err := keyless.VouchAddress(ctx, "203.0.113.9"); !errors.Is(err, auth.ErrNoSealer) {
		t.Errorf("VouchAddress without a key: %v, want ErrNoSealer", err)
	}
	if _, ok := keyless.VouchedAddress(ctx, v4); ok {
		t.Error("a service without a key accepted a vouch")
	}
}
