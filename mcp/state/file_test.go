package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// newFile returns a state file in a fresh directory and its path.
func newFile(t *testing.T) (*File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcp-state.json")
	return Open(path), path
}

func mustUpdate(t *testing.T, f *File, fn func(*State) error) {
	t.Helper()
	if err := f.Update(t.Context(), fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

func mustLoad(t *testing.T, f *File) State {
	t.Helper()
	st, err := f.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return st
}

func writeRaw(t *testing.T, path, contents string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(contents), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readObject(t *testing.T, path string) map[string]json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatalf("state file is not a JSON object: %v\n%s", err, data)
	}
	return obj
}

func compact(t *testing.T, raw []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// fullState has every field set.
func fullState() State {
	return State{
		Auth: &Auth{
			Token:     "tok_abc",
			ExpiresAt: "2999-01-02T03:04:05Z",
			Account: &Account{
				ID:          "acct_1",
				Login:       "octocat",
				DisplayName: "The Octocat & friends <3",
				AvatarURL:   "https://avatars.example.com/u/1?v=4&s=40",
			},
			StoredAt: "2025-06-01T10:00:00.5+02:00",
			Source:   AuthSourceDeviceFlow,
		},
		PendingDeviceAuth: &PendingDeviceAuth{
			RequestID:       "req_1",
			UserCode:        "ABCD-EFGH",
			VerificationURI: "https://github.com/login/device",
			IntervalSeconds: 5,
			ExpiresAt:       "2999-01-01T00:15:00Z",
			StartedAt:       "2025-06-01T10:00:00Z",
			SuggestedRoomID: "github.com/o/r",
		},
		AgentIdentities: map[string]Identity{
			"codex:1": {
				Name:             "codex-1",
				DisplayName:      "Codex",
				OwnerLabel:       "octocat",
				OwnerAttribution: "octocat's Codex",
				IDELabel:         "VS Code",
				ActorLabel:       "Codex (octocat)",
				CanonicalKey:     "octocat/codex",
				RuntimeKey:       "codex:1",
				Source:           "resolved",
				ResolvedAt:       "2025-06-01T10:01:00Z",
			},
		},
		CurrentRoom: "github.com/o/r",
		RoomSessions: map[string]RoomSession{
			"github.com/o/r": {
				RoomID:        "github.com/o/r",
				ProjectID:     "proj_1",
				Code:          "FEH7-YWH4-ZYT3",
				DisplayName:   "o/r",
				JoinedVia:     JoinedViaGitRemote,
				JoinedAt:      "2025-06-01T10:02:00Z",
				LastSeenAt:    "2025-06-01T10:03:00Z",
				LastMessageID: "msg_42",
			},
		},
		AgentSessions: map[string]AgentSession{
			"as_7": {SessionID: "as_7", SessionToken: "sess_tok", RoomID: "github.com/o/r", SessionKind: "worker", Runtime: "codex",
				ActorLabel: "Codex | octocat's agent | Codex", AgentKey: "octocat/codex", DisplayName: "Codex", RuntimeKey: "codex:1",
				CreatedAt: "2025-06-01T10:04:00Z"},
		},
		CodexLiveSessions: map[string]CodexLiveSession{
			"lcs_1": {SessionID: "lcs_1", RoomID: "github.com/o/r", RoomIdentifier: "github.com/o/r", JoinedVia: JoinedViaJoinRoom,
				Cwd: "/src/r", StopPhrase: "/stop-codex-room", Token: "LOCAL_CODEX_ROOM_1", ThreadID: "th_1", TurnID: "tu_1",
				ServerURL: "ws://127.0.0.1:4500", ServerPID: 4242, LaunchedServer: true, CodexBin: "codex", Status: "running",
				StartedAt: "2025-06-01T10:05:00Z", UpdatedAt: "2025-06-01T10:06:00Z"},
		},
		CurrentCodexLiveSessions: map[string]string{"github.com/o/r": "lcs_1"},
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	f, path := newFile(t)
	want := fullState()
	mustUpdate(t, f, func(s *State) error {
		*s = fullState()
		return nil
	})
	// A fresh File, so nothing can come from memory.
	got := mustLoad(t, Open(path))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load after Update:\ngot  %+v\nwant %+v", got, want)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"The Octocat & friends <3", "?v=4&s=40"} {
		if !bytes.Contains(data, []byte(s)) {
			t.Errorf("file does not contain %q unescaped:\n%s", s, data)
		}
	}
	if !bytes.HasSuffix(data, []byte("}\n")) {
		t.Errorf("file does not end in a newline")
	}
}

// TestLoadFormat pins the file format: a file as the original client
// writes it decodes into every field.
func TestLoadFormat(t *testing.T) {
	t.Parallel()
	f, path := newFile(t)
	writeRaw(t, path, `{
  "auth": {
    "token": "tok_abc",
    "expires_at": "2999-01-02T03:04:05Z",
    "account": {"id": "acct_1", "login": "octocat", "display_name": "The Octocat & friends <3", "avatar_url": "https://avatars.example.com/u/1?v=4&s=40"},
    "stored_at": "2025-06-01T10:00:00.5+02:00",
    "source": "device_flow"
  },
  "pending_device_auth": {
    "request_id": "req_1", "user_code": "ABCD-EFGH", "verification_uri": "https://github.com/login/device",
    "interval_seconds": 5, "expires_at": "2999-01-01T00:15:00Z", "started_at": "2025-06-01T10:00:00Z",
    "suggested_room_id": "github.com/o/r"
  },
  "agent_identities": {
    "codex:1": {
      "name": "codex-1", "display_name": "Codex", "owner_label": "octocat", "owner_attribution": "octocat's Codex",
      "ide_label": "VS Code", "actor_label": "Codex (octocat)", "canonical_key": "octocat/codex",
      "runtime_key": "codex:1", "source": "resolved", "resolved_at": "2025-06-01T10:01:00Z"
    }
  },
  "current_room": "github.com/o/r",
  "room_sessions": {
    "github.com/o/r": {
      "room_id": "github.com/o/r", "project_id": "proj_1", "code": "FEH7-YWH4-ZYT3", "display_name": "o/r",
      "joined_via": "git-remote", "joined_at": "2025-06-01T10:02:00Z", "last_seen_at": "2025-06-01T10:03:00Z",
      "last_message_id": "msg_42"
    }
  },
  "agent_sessions": {
    "as_7": {
      "session_id": "as_7", "session_token": "sess_tok", "room_id": "github.com/o/r", "session_kind": "worker", "runtime": "codex",
      "actor_label": "Codex | octocat's agent | Codex", "agent_key": "octocat/codex", "display_name": "Codex",
      "runtime_key": "codex:1", "created_at": "2025-06-01T10:04:00Z"
    }
  },
  "codex_live_sessions": {
    "lcs_1": {
      "session_id": "lcs_1", "room_id": "github.com/o/r", "room_identifier": "github.com/o/r", "room_code": null,
      "room_display_name": null, "joined_via": "join_room", "cwd": "/src/r", "stop_phrase": "/stop-codex-room", "max_minutes": 0,
      "deadline_utc": null, "token": "LOCAL_CODEX_ROOM_1", "thread_id": "th_1", "turn_id": "tu_1",
      "server_url": "ws://127.0.0.1:4500", "server_pid": 4242, "launched_server": true, "codex_bin": "codex",
      "status": "running", "last_error": null, "started_at": "2025-06-01T10:05:00Z", "updated_at": "2025-06-01T10:06:00Z"
    }
  },
  "current_codex_live_session_ids": {"github.com/o/r": "lcs_1"}
}`)
	got := mustLoad(t, f)
	if want := fullState(); !reflect.DeepEqual(got, want) {
		t.Errorf("Load:\ngot  %+v\nwant %+v", got, want)
	}
}

func TestUnknownKeysPreserved(t *testing.T) {
	t.Parallel()
	f, path := newFile(t)
	writeRaw(t, path, `{
		"version": 3,
		"future_thing": {"a": [1, 2, {"b": null}], "s": "x<y"},
		"current_room": "old",
		"auth": {"token": "t", "stored_at": "2025-01-01T00:00:00Z", "source": "device_flow", "refresh_token": "kept"},
		"room_sessions": {"r1": {"room_id": "r1", "future_field": true}}
	}`)
	mustUpdate(t, f, func(s *State) error {
		s.CurrentRoom = "new"
		s.AdvanceLastMessage("r1", "msg_3")
		return nil
	})
	obj := readObject(t, path)
	tests := []struct {
		key, want string
	}{
		{"version", `3`},
		{"future_thing", `{"a":[1,2,{"b":null}],"s":"x<y"}`},
		{"current_room", `"new"`},
		// auth was not changed, so fields this version does not know survive.
		{"auth", `{"token":"t","stored_at":"2025-01-01T00:00:00Z","source":"device_flow","refresh_token":"kept"}`},
		// room_sessions was changed and is rewritten from what is known.
		{"room_sessions", `{"r1":{"room_id":"r1","last_message_id":"msg_3"}}`},
	}
	for _, tt := range tests {
		raw, ok := obj[tt.key]
		if !ok {
			t.Errorf("key %q missing after Update", tt.key)
			continue
		}
		if got := compact(t, raw); got != tt.want {
			t.Errorf("key %q = %s, want %s", tt.key, got, tt.want)
		}
	}
	if len(obj) != len(tests) {
		t.Errorf("file has %d keys, want %d: %v", len(obj), len(tests), obj)
	}

	// Clearing a key removes it from the file; unknown keys stay.
	mustUpdate(t, f, func(s *State) error {
		s.CurrentRoom = ""
		s.Auth = nil
		clear(s.RoomSessions)
		return nil
	})
	obj = readObject(t, path)
	for _, k := range []string{"current_room", "auth", "room_sessions"} {
		if raw, ok := obj[k]; ok {
			t.Errorf("key %q = %s after clearing, want absent", k, raw)
		}
	}
	for _, k := range []string{"version", "future_thing"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("key %q lost", k)
		}
	}
}

func TestLoadMissing(t *testing.T) {
	t.Parallel()
	f, path := newFile(t)
	got := mustLoad(t, f)
	if got.Auth != nil || got.PendingDeviceAuth != nil || got.CurrentRoom != "" ||
		len(got.AgentIdentities) != 0 || len(got.RoomSessions) != 0 {
		t.Errorf("Load of missing file = %+v, want empty", got)
	}
	// Maps are usable without a nil check.
	if got.AgentIdentities == nil || got.RoomSessions == nil {
		t.Errorf("Load returned nil maps")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load created the file: %v", err)
	}
}

func TestCorruptFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		contents string
		// wantRoom is the CurrentRoom Load still returns.
		wantRoom string
		// wantKept are keys that survive the Update that replaces the file.
		wantKept []string
	}{
		{name: "not json", contents: "{\"current_room\": \"a\""},
		{name: "empty", contents: ""},
		{name: "array", contents: `["current_room"]`},
		{name: "null", contents: `null`},
		{name: "string", contents: `"hello"`},
		{name: "trailing garbage", contents: `{"current_room": "a"} x`},
		{name: "nul bytes", contents: "\x00\x00\x00"},
		{
			name:     "owned key of wrong type",
			contents: `{"auth": 5, "current_room": "a", "version": 2}`,
			wantRoom: "a",
			wantKept: []string{"current_room", "version"},
		},
		{
			name:     "bad entry in owned map",
			contents: `{"room_sessions": {"r1": {"room_id": 7}}, "current_room": "a"}`,
			wantRoom: "a",
			wantKept: []string{"current_room"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, path := newFile(t)
			writeRaw(t, path, tt.contents)

			st, err := f.Load()
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Load error = %v, want *CorruptError", err)
			}
			if ce.Path != path {
				t.Errorf("CorruptError.Path = %q, want %q", ce.Path, path)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			if st.CurrentRoom != tt.wantRoom || st.Auth != nil || len(st.RoomSessions) != 0 {
				t.Errorf("Load = %+v, want CurrentRoom %q and nothing else", st, tt.wantRoom)
			}

			mustUpdate(t, f, func(s *State) error {
				s.AdvanceLastMessage("r2", "msg_1")
				return nil
			})
			got, err := f.Load()
			if err != nil {
				t.Fatalf("Load after Update: %v", err)
			}
			if got.RoomSessions["r2"].LastMessageID != "msg_1" {
				t.Errorf("Update's change missing: %+v", got)
			}
			obj := readObject(t, path)
			for _, k := range tt.wantKept {
				if _, ok := obj[k]; !ok {
					t.Errorf("key %q lost", k)
				}
			}

			copies, err := filepath.Glob(path + ".corrupt-*")
			if err != nil {
				t.Fatal(err)
			}
			if len(copies) != 1 {
				t.Fatalf("corrupt copies = %v, want one", copies)
			}
			saved, err := os.ReadFile(copies[0])
			if err != nil {
				t.Fatal(err)
			}
			if string(saved) != tt.contents {
				t.Errorf("corrupt copy = %q, want %q", saved, tt.contents)
			}
		})
	}
}

func TestExpiredDropped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		expiresAt string
		wantKept  bool
	}{
		{"past", "2001-02-03T04:05:06Z", false},
		{"past with offset", "2001-02-03T04:05:06.789-07:00", false},
		{"future", "2999-01-01T00:00:00Z", true},
		{"none", "", true},
		{"unreadable", "next tuesday", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, path := newFile(t)
			auth := fmt.Sprintf(`{"token":"t","expires_at":%q,"stored_at":"2000-01-01T00:00:00Z","source":"device_flow"}`, tt.expiresAt)
			pending := fmt.Sprintf(`{"request_id":"r","user_code":"C","verification_uri":"u","interval_seconds":5,"expires_at":%q,"started_at":"2000-01-01T00:00:00Z"}`, tt.expiresAt)
			writeRaw(t, path, `{"auth":`+auth+`,"pending_device_auth":`+pending+`,"current_room":"a"}`)

			st := mustLoad(t, f)
			if got := st.Auth != nil; got != tt.wantKept {
				t.Errorf("Auth kept = %v, want %v", got, tt.wantKept)
			}
			if got := st.PendingDeviceAuth != nil; got != tt.wantKept {
				t.Errorf("PendingDeviceAuth kept = %v, want %v", got, tt.wantKept)
			}

			// The next Update cleans expired entries out of the file too.
			mustUpdate(t, f, func(s *State) error {
				if got := s.Auth != nil; got != tt.wantKept {
					t.Errorf("Update saw Auth = %v, want %v", got, tt.wantKept)
				}
				s.CurrentRoom = "b"
				return nil
			})
			obj := readObject(t, path)
			for _, k := range []string{"auth", "pending_device_auth"} {
				if _, got := obj[k]; got != tt.wantKept {
					t.Errorf("file has %q = %v, want %v", k, got, tt.wantKept)
				}
			}
		})
	}
}

func TestUnchangedNotRewritten(t *testing.T) {
	t.Parallel()
	f, path := newFile(t)
	mustUpdate(t, f, func(s *State) error {
		*s = fullState()
		return nil
	})
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	mustUpdate(t, f, func(s *State) error {
		s.AdvanceLastMessage("github.com/o/r", "msg_41") // older: no change
		return nil
	})
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Errorf("a no-op Update replaced the file")
	}
}

func TestUpdateFnFails(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("boom")
	tests := []struct {
		name string
		fn   func(*State) error
	}{
		{"error", func(s *State) error {
			s.CurrentRoom = "changed"
			return errBoom
		}},
		{"panic", func(s *State) error {
			s.CurrentRoom = "changed"
			panic(errBoom)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, path := newFile(t)
			writeRaw(t, path, `{"current_room":"orig"}`)

			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = r.(error)
					}
				}()
				return f.Update(t.Context(), tt.fn)
			}()
			if err != errBoom {
				t.Errorf("Update error = %v, want fn's error unchanged", err)
			}
			assertUnlocked(t, path)
			if got := mustLoad(t, f).CurrentRoom; got != "orig" {
				t.Errorf("CurrentRoom = %q, want %q (nothing written)", got, "orig")
			}
			// The File is usable again at once.
			mustUpdate(t, f, func(s *State) error {
				s.CurrentRoom = "next"
				return nil
			})
			if got := mustLoad(t, f).CurrentRoom; got != "next" {
				t.Errorf("CurrentRoom = %q, want %q", got, "next")
			}
		})
	}
}

func TestPermissions(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("Unix permissions")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "home", ".letagents")
	path := filepath.Join(dir, "mcp-state.json")
	f := Open(path)
	mustUpdate(t, f, func(s *State) error {
		*s = fullState()
		return nil
	})
	// And once more, replacing an existing file.
	mustUpdate(t, f, func(s *State) error {
		s.CurrentRoom = "other"
		return nil
	})
	tests := []struct {
		path string
		want os.FileMode
	}{
		{path, 0o600},
		{dir, 0o700 | os.ModeDir},
		{filepath.Dir(dir), 0o700 | os.ModeDir},
	}
	for _, tt := range tests {
		fi, err := os.Stat(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode(); got != tt.want {
			t.Errorf("mode of %s = %v, want %v", tt.path, got, tt.want)
		}
	}

	// A corrupt file's copy is private too.
	writeRaw(t, path, "not json")
	mustUpdate(t, f, func(s *State) error {
		s.CurrentRoom = "x"
		return nil
	})
	copies, _ := filepath.Glob(path + ".corrupt-*")
	for _, c := range copies {
		fi, err := os.Stat(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode(); got != 0o600 {
			t.Errorf("mode of %s = %v, want %v", c, got, os.FileMode(0o600))
		}
	}
	if len(copies) != 1 {
		t.Errorf("corrupt copies = %v, want one", copies)
	}
}

// TestConcurrentGoroutines has 20 goroutines each increment a counter of
// their own 10 times, half through one shared File and half through Files
// of their own, while a reader loads throughout: every increment must
// survive, no two updates may run at once, and every Load must see a
// whole file. The test holds the lock until every goroutine waits for
// it, so their updates surely contend.
func TestConcurrentGoroutines(t *testing.T) {
	t.Parallel()
	const goroutines, updates = 20, 10
	shared, path := newFile(t)
	blocker, err := tryLock(path + lockSuffix)
	if err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := shared.Load(); err != nil {
				t.Errorf("Load during updates: %v", err)
				return
			}
		}
	}()

	var wg sync.WaitGroup
	var inside atomic.Int32
	waiting := make([]*waitingCtx, goroutines)
	for g := range goroutines {
		f := shared
		if g%2 == 1 {
			f = Open(path)
		}
		room := fmt.Sprintf("room-%02d", g)
		waiting[g] = newWaitingCtx(context.Background())
		wg.Go(func() {
			var ctx context.Context = waiting[g]
			for range updates {
				err := f.Update(ctx, func(s *State) error {
					if n := inside.Add(1); n != 1 {
						t.Errorf("%s: %d updates at once", room, n)
					}
					defer inside.Add(-1)
					rs := s.RoomSessions[room]
					n, _ := messageNumber(rs.LastMessageID)
					s.AdvanceLastMessage(room, fmt.Sprintf("msg_%d", n+1))
					return nil
				})
				if err != nil {
					t.Errorf("%s: Update: %v", room, err)
					return
				}
				ctx = context.Background()
			}
		})
	}
	for _, ctx := range waiting {
		awaitWaiting(t, ctx)
	}
	blocker.Close()
	wg.Wait()
	close(stop)
	<-readerDone

	st := mustLoad(t, shared)
	if len(st.RoomSessions) != goroutines {
		t.Errorf("rooms = %d, want %d", len(st.RoomSessions), goroutines)
	}
	total := 0
	for g := range goroutines {
		room := fmt.Sprintf("room-%02d", g)
		n, _ := messageNumber(st.RoomSessions[room].LastMessageID)
		if n != updates {
			t.Errorf("%s counter = %d, want %d", room, n, updates)
		}
		total += int(n)
	}
	if total != goroutines*updates {
		t.Errorf("changes present = %d, want %d", total, goroutines*updates)
	}
	assertNoLeftovers(t, path)
}

// assertUnlocked checks that nothing holds the lock of the state file at
// path.
func assertUnlocked(t *testing.T, path string) {
	t.Helper()
	fh, err := tryLock(path + lockSuffix)
	if err != nil {
		t.Fatalf("lock after the update: %v, want it released", err)
	}
	fh.Close()
}

// assertNoLeftovers checks that only the state file and its lock file
// remain beside path, with the lock released: no temporary files.
func assertNoLeftovers(t *testing.T, path string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	assertUnlocked(t, path)
	for _, e := range entries {
		if e.Name() != filepath.Base(path) && e.Name() != filepath.Base(path)+lockSuffix {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}
