package state

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestDefaultPath(t *testing.T) {
	t.Parallel()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skipf("no home directory: %v", err)
	}
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"unset", nil, filepath.Join(home, ".letagents", "mcp-state.json")},
		{"empty", map[string]string{PathEnv: ""}, filepath.Join(home, ".letagents", "mcp-state.json")},
		{"override", map[string]string{PathEnv: "/tmp/x/state.json"}, "/tmp/x/state.json"},
		{"other variables ignored", map[string]string{"HOME": "/nowhere"}, filepath.Join(home, ".letagents", "mcp-state.json")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := DefaultPath(func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatalf("DefaultPath: %v", err)
			}
			if got != tt.want {
				t.Errorf("DefaultPath = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAdvanceLastMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		current string // "" means no session for the room
		msgID   string
		want    string // "" means still no session
	}{
		{"first message creates session", "", "msg_1", "msg_1"},
		{"forward", "msg_5", "msg_6", "msg_6"},
		{"numeric not lexical", "msg_9", "msg_10", "msg_10"},
		{"backwards ignored", "msg_10", "msg_9", "msg_10"},
		{"same ignored", "msg_7", "msg_7", "msg_7"},
		{"leading zeros compare by value", "msg_7", "msg_007", "msg_7"},
		{"large numbers", "msg_18446744073709551614", "msg_18446744073709551615", "msg_18446744073709551615"},
		{"overflow ignored", "msg_5", "msg_18446744073709551616", "msg_5"},
		{"no prefix ignored", "msg_5", "6", "msg_5"},
		{"wrong prefix ignored", "msg_5", "message_6", "msg_5"},
		{"empty number ignored", "msg_5", "msg_", "msg_5"},
		{"negative ignored", "msg_5", "msg_-6", "msg_5"},
		{"sign ignored", "msg_5", "msg_+6", "msg_5"},
		{"trailing junk ignored", "msg_5", "msg_6x", "msg_5"},
		{"empty ignored", "msg_5", "", "msg_5"},
		{"bad id on empty room ignored", "", "bogus", ""},
		{"bad current replaced", "garbage", "msg_1", "msg_1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s State
			if tt.current != "" {
				s.RoomSessions = map[string]RoomSession{
					"r": {RoomID: "r", DisplayName: "kept", LastMessageID: tt.current},
				}
			}
			s.AdvanceLastMessage("r", tt.msgID)
			rs, ok := s.RoomSessions["r"]
			if tt.want == "" {
				if ok {
					t.Fatalf("session created: %+v", rs)
				}
				return
			}
			if !ok {
				t.Fatalf("no session for room")
			}
			if rs.LastMessageID != tt.want {
				t.Errorf("LastMessageID = %q, want %q", rs.LastMessageID, tt.want)
			}
			if rs.RoomID != "r" {
				t.Errorf("RoomID = %q, want %q", rs.RoomID, "r")
			}
			if tt.current != "" && rs.DisplayName != "kept" {
				t.Errorf("DisplayName = %q, want other fields kept", rs.DisplayName)
			}
		})
	}
}

func TestAdvanceLastMessageSequence(t *testing.T) {
	t.Parallel()
	var s State
	for _, id := range []string{"msg_3", "msg_1", "msg_12", "msg_2", "bad", "msg_11", "msg_13"} {
		s.AdvanceLastMessage("r", id)
	}
	s.AdvanceLastMessage("", "msg_99")
	if got, want := s.RoomSessions["r"].LastMessageID, "msg_13"; got != want {
		t.Errorf("LastMessageID = %q, want %q", got, want)
	}
	if _, ok := s.RoomSessions[""]; ok {
		t.Errorf("session created for empty room id")
	}
}

// TestFieldsMatchTags checks that the owned keys encode reads and writes
// are exactly State's json keys.
func TestFieldsMatchTags(t *testing.T) {
	t.Parallel()
	var want []string
	typ := reflect.TypeFor[State]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		want = append(want, name)
	}
	var got []string
	var s State
	for _, f := range fields {
		got = append(got, f.key)
		// The pointer must be to the field with that tag.
		p := reflect.ValueOf(f.ptr(&s)).Pointer()
		idx := slices.Index(want, f.key)
		if idx < 0 {
			continue
		}
		if fp := reflect.ValueOf(&s).Elem().Field(idx).Addr().Pointer(); p != fp {
			t.Errorf("fields[%q] points at the wrong State field", f.key)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("owned keys = %v, want State's json keys %v", got, want)
	}
}
