package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// vouchLife bounds how long a vouched address stands. The hosted endpoint
// vouches afresh for each call it forwards, so a value is used within
// seconds; the bound only limits what a leaked one could be replayed for
// (counting the replayer against that address's limits).
const vouchLife = time.Minute

// vouchAAD binds a sealed address to its use, so that no other sealed
// value of the service (a GitHub token, a device code) passes for one.
var vouchAAD = []byte("letagents vouched client address")

// ErrNoSealer says the service has no token key to vouch with.
var ErrNoSealer = errors.New("no token key (LETAGENTS_KMS_KEY_ID or LETAGENTS_TOKEN_KEY_FILE)")

// VouchAddress seals addr, an IP address, for wire.VouchedAddressHeader:
// the hosted MCP endpoint's word for the address of the agent it calls
// the API for. Only a holder of the service's key can make one.
func (s *Service) VouchAddress(ctx context.Context, addr string) (string, error) {
	if s.cfg.Sealer == nil {
		return "", ErrNoSealer
	}
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return "", err
	}
	expires := s.cfg.Now().Add(vouchLife).Unix()
	sealed, err := s.cfg.Sealer.Seal(ctx, []byte(strconv.FormatInt(expires, 10)+" "+ip.String()), vouchAAD)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(sealed), nil
}

// VouchedAddress is the address a VouchAddress value vouches for, false
// for anything else: not sealed by this service, past its life, or
// unreadable (the request is then counted by its own address).
func (s *Service) VouchedAddress(ctx context.Context, v string) (string, bool) {
	if s.cfg.Sealer == nil || v == "" || len(v) > 512 {
		return "", false
	}
	sealed, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return "", false
	}
	plain, err := s.cfg.Sealer.Open(ctx, sealed, vouchAAD)
	if err != nil {
		return "", false
	}
	exp, addr, ok := strings.Cut(string(plain), " ")
	expires, err := strconv.ParseInt(exp, 10, 64)
	if !ok || err != nil || !s.cfg.Now().Before(time.Unix(expires, 0)) {
		return "", false
	}
	if _, err := netip.ParseAddr(addr); err != nil {
		return "", false
	}
	return addr, true
}
