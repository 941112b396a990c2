package letagents

import (
	"errors"
	"testing"
	"time"
)

func TestParseMessageID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"msg_1", 1, false},
		{"msg_0", 0, false},
		{"msg_9223372036854775807", 9223372036854775807, false},
		{"42", 42, false},
		{"msg_", 0, true},
		{"", 0, true},
		{"msg_-1", 0, true},
		{"msg_+1", 0, true},
		{"-1", 0, true},
		{"msg_1x", 0, true},
		{"task_1", 0, true},
		{"msg_99999999999999999999", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseMessageID(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseMessageID(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		var e *Error
		if err != nil && (!errors.As(err, &e) || e.Code != Invalid) {
			t.Errorf("ParseMessageID(%q) error %v is not an Invalid *Error", tt.in, err)
		}
		if err == nil && tt.in[0] == 'm' && MessageID(got) != tt.in {
			t.Errorf("MessageID(%d) = %q, want %q", got, MessageID(got), tt.in)
		}
	}
}

func TestFormatTime(t *testing.T) {
	t.Parallel()
	loc := time.FixedZone("x", 3600)
	tests := []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 12, 2, 13, 7, 55, 101_000_000, loc), "2026-12-02T12:07:55.101Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "2026-01-02T03:04:05.000Z"},
	}
	for _, tt := range tests {
		if got := FormatTime(tt.in); got != tt.want {
			t.Errorf("FormatTime(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
