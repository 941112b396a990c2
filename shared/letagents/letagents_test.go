package letagents

import (
	"errors"
	"math/rand/v2"
	"strings"
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
		{"MSG_2", 2, false},
		{"Msg_7", 7, false},
		{"msg_", 0, true},
		{"MSG_", 0, true},
		{"ms", 0, true},
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
		if err != nil && (!errors.As(err, &e) || e.Kind != Invalid) {
			t.Errorf("ParseMessageID(%q) error %v is not an Invalid *Error", tt.in, err)
		}
		if err == nil && strings.HasPrefix(tt.in, "msg_") && MessageID(got) != tt.in {
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
		{time.Date(2026, 1, 2, 3, 4, 5, 5_999_999, time.UTC), "2026-01-02T03:04:05.005Z"},
		{time.Date(1, 1, 1, 0, 0, 0, 999_000_000, time.UTC), "0001-01-01T00:00:00.999Z"},
		{time.Date(9999, 12, 31, 23, 59, 59, 80_000_000, time.UTC), "9999-12-31T23:59:59.080Z"},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), "10000-01-01T00:00:00.000Z"},
		{time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), "-0001-01-01T00:00:00.000Z"},
	}
	for _, tt := range tests {
		if got := FormatTime(tt.in); got != tt.want {
			t.Errorf("FormatTime(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// Whatever the instant and zone, the layout's own rendering.
	r := rand.New(rand.NewPCG(1, 2))
	for range 10_000 {
		in := time.Unix(r.Int64N(1<<38)-1<<37, r.Int64N(1e9)).In(time.FixedZone("z", int(r.Int64N(50_000))-25_000))
		if got, want := FormatTime(in), in.UTC().Format(wireTimeLayout); got != want {
			t.Fatalf("FormatTime(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestReservedSender(t *testing.T) {
	t.Parallel()
	tests := []struct {
		sender string
		want   bool
	}{
		{"letagents", true},
		{"LetAgents", true},
		{" \tletagents\n", true},
		{"let agents", true},
		{"let.agents!", true},
		{"letagents\u200b", true},          // zero-width space
		{"\u2060let\u00adagents", true},    // word joiner, soft hyphen
		{"ｌｅｔａｇｅｎｔｓ", true},                // full-width
		{"l\u0435t\u0430g\u0435nts", true}, // Cyrillic е and а
		{"Ietagents", true},                // capital I for l
		{"1etagents", true},
		{"letagents | Ann's agent | Codex", true},
		{"LetAgents (Ann's agent)", true},
		{"letagents fan", false},
		{"Builder | letagents' agent | Codex", false},
		{"not letagents", false},
		{"agents", false},
		{"letagent", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := ReservedSender(tt.sender); got != tt.want {
			t.Errorf("ReservedSender(%q) = %v, want %v", tt.sender, got, tt.want)
		}
	}
}

func TestValidateSystemSender(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		m    NewMessage
		want string // part of the error, "" for none
	}{
		{"the server's line", SystemMessage("r", "[status] done"), ""},
		{"a system line under another name", NewMessage{RoomID: "r", Sender: "Ann", Source: SourceSystem, Text: "x"}, "system lines are sent as"},
		{"anonymous as the server", NewMessage{RoomID: "r", Sender: "letagents", Text: "x"}, "reserved"},
		{"an agent as the server", NewMessage{RoomID: "r", Sender: "LETAGENTS ", Source: SourceAgent, Text: "x"}, "reserved"},
		{"a browser as the server", NewMessage{RoomID: "r", Sender: "let agents", Source: SourceBrowser, Text: "x"}, "reserved"},
		{"an unknown source", NewMessage{RoomID: "r", Sender: "Ann", Source: "server", Text: "x"}, "source must be"},
		{"anyone else", NewMessage{RoomID: "r", Sender: "Ann", Source: SourceBrowser, Text: "[status] done"}, ""},
	}
	for _, tt := range tests {
		err := tt.m.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Validate = %v, want nil", tt.name, err)
		case tt.want != "" && (!IsKind(err, Invalid) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: Validate = %v, want an Invalid error about %q", tt.name, err, tt.want)
		}
	}
}

// TestNameKey: names that read alike share a key, whatever their case,
// spacing, punctuation, width or lookalike letters; names that read
// differently do not.
func TestNameKey(t *testing.T) {
	t.Parallel()
	same := [][]string{
		{"alice", "Alice", "ALICE", "AIice", "a l i c e", "ａｌｉｃｅ", "аlice", "ALІCE"},
		{"bob", "B0B", "b-o-b", "bοb"},
		{"alice Name", "Alice-Name", "ALICE NAME", "alice_name!"},
		{"Zebulon", "ZEBULON", "Zebul0n", "Zеbulon"},
		{"letagents", "LetAgents", "lеtagents"},
		{"Ιvan", "ivan", "IVAN"},
	}
	for _, group := range same {
		for _, n := range group[1:] {
			if NameKey(n) != NameKey(group[0]) {
				t.Errorf("NameKey(%q) = %q, NameKey(%q) = %q; want equal", n, NameKey(n), group[0], NameKey(group[0]))
			}
		}
	}
	for _, pair := range [][2]string{{"alice", "alicia"}, {"bob", "rob"}, {"Zebulon", "Zebulun"}, {"ann", "anne"}} {
		if NameKey(pair[0]) == NameKey(pair[1]) {
			t.Errorf("NameKey(%q) = NameKey(%q); want different", pair[0], pair[1])
		}
	}
}
