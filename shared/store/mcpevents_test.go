package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/letagents/letagents-go/shared/store"
)

func TestMCPEvents(t *testing.T) {
	t.Parallel()
	s, _ := newStoreAndPool(t)
	ctx := context.Background()
	for _, id := range []string{"mcps_a", "mcps_b"} {
		if err := s.CreateSession(ctx, id, ""); err != nil {
			t.Fatal(err)
		}
	}
	put := func(session, stream, msg string) string {
		t.Helper()
		id, err := s.StoreMCPEvent(ctx, session, stream, []byte(msg))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a1 := put("mcps_a", "post-1", `{"n":1}`)
	put("mcps_a", "get", `{"other stream":true}`)
	put("mcps_a", "post-1", `{"n":2}`)
	put("mcps_a", "post-1", `{"n":3}`)
	b1 := put("mcps_b", "post-9", `{"b":1}`)

	replay := func(session, after string) (string, []string, error) {
		var got []string
		stream, err := s.ReplayMCPEvents(ctx, session, after, func(_ string, m []byte) error {
			got = append(got, string(m))
			return nil
		})
		return stream, got, err
	}
	for _, c := range []struct {
		name, session, after, stream string
		want                         []string
		unknown                      bool
	}{
		{name: "the rest of the event's stream", session: "mcps_a", after: a1, stream: "post-1", want: []string{`{"n":2}`, `{"n":3}`}},
		{name: "the last event: nothing after it", session: "mcps_b", after: b1, stream: "post-9"},
		{name: "another session's event", session: "mcps_a", after: b1, unknown: true},
		{name: "never sent", session: "mcps_a", after: "999999", unknown: true},
		{name: "not an event id", session: "mcps_a", after: "abc", unknown: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			stream, got, err := replay(c.session, c.after)
			if c.unknown {
				if !errors.Is(err, store.ErrUnknownMCPEvent) {
					t.Fatalf("replay after %s: %v, want ErrUnknownMCPEvent", c.after, err)
				}
				return
			}
			if err != nil || stream != c.stream || !slices.Equal(got, c.want) {
				t.Errorf("replay after %s: stream %q, %v, %v; want %q, %v", c.after, stream, got, err, c.stream, c.want)
			}
		})
	}

	// A send that fails ends the replay with its error.
	stop := errors.New("client gone")
	if _, err := s.ReplayMCPEvents(ctx, "mcps_a", a1, func(string, []byte) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("replay with a failing send: %v, want its error", err)
	}
	// Purged, or gone with the session.
	if err := s.PurgeMCPEvents(ctx, "mcps_a"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := replay("mcps_a", a1); !errors.Is(err, store.ErrUnknownMCPEvent) {
		t.Errorf("replay after a purge: %v, want ErrUnknownMCPEvent", err)
	}
	if err := s.EndSession(ctx, "mcps_b"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := replay("mcps_b", b1); !errors.Is(err, store.ErrUnknownMCPEvent) {
		t.Errorf("replay after the session ended: %v, want ErrUnknownMCPEvent", err)
	}
}
