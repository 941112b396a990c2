package letagents_test

import (
	"encoding/base64"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

func TestSearchCursorRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range []letagents.SearchCursor{
		{Rank: 0.0607927, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 678000000, time.UTC), RoomID: "github.com/o/r", Seq: 42},
		{Rank: 0, CreatedAt: time.UnixMicro(0).UTC(), RoomID: "FEH7-YWH4-ZYT3", Seq: 1},
		{Rank: math.MaxFloat32, CreatedAt: time.Date(1969, 12, 31, 23, 59, 59, 1000, time.UTC), RoomID: "ü room", Seq: math.MaxInt64},
	} {
		s := c.String()
		if strings.ContainsAny(s, "+/=") {
			t.Errorf("cursor %q is not URL-safe", s)
		}
		got, err := letagents.ParseSearchCursor(s)
		if err != nil || got != c {
			t.Errorf("ParseSearchCursor(%v.String()) = %v, %v", c, got, err)
		}
	}
}

func TestParseSearchCursorRefuses(t *testing.T) {
	t.Parallel()
	good := letagents.SearchCursor{Rank: 0.5, CreatedAt: time.Now(), RoomID: "r", Seq: 3}.String()
	raw, err := base64.RawURLEncoding.DecodeString(good)
	if err != nil {
		t.Fatal(err)
	}
	raw[0]++
	tests := map[string]string{
		"empty":         "",
		"not base64":    "!!!",
		"too short":     "AQ",
		"other version": base64.RawURLEncoding.EncodeToString(raw),
		"no room":       letagents.SearchCursor{Rank: 0.5, CreatedAt: time.Now(), Seq: 3}.String(),
		"seq 0":         letagents.SearchCursor{Rank: 0.5, CreatedAt: time.Now(), RoomID: "r"}.String(),
		"NaN rank":      letagents.SearchCursor{Rank: float32(math.NaN()), CreatedAt: time.Now(), RoomID: "r", Seq: 1}.String(),
		"too long":      letagents.SearchCursor{Rank: 0.5, CreatedAt: time.Now(), RoomID: strings.Repeat("r", letagents.MaxSearchCursorBytes), Seq: 1}.String(),
		"cut in seq":    good[:8],
		"padded":        good + "==",
		"NUL in room":   letagents.SearchCursor{Rank: 0.5, CreatedAt: time.Now(), RoomID: "a\x00b", Seq: 1}.String(),
		"bad UTF-8":     letagents.SearchCursor{Rank: 0.5, CreatedAt: time.Now(), RoomID: "\xff", Seq: 1}.String(),
	}
	for name, s := range tests {
		_, err := letagents.ParseSearchCursor(s)
		var e *letagents.Error
		if !errors.As(err, &e) || e.Kind != letagents.Invalid || e.Code != letagents.CodeSearchCursorInvalid {
			t.Errorf("%s: ParseSearchCursor(%q) = %v, want SEARCH_CURSOR_INVALID", name, s, err)
		}
	}
}
