package auth

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
)

// readable checks at most its bound of GitHub repositories, once each
// (a repository's branch rooms share its answer), and reports the rooms
// past the bound as unchecked, in the listing's order.
func TestReadableBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(pgtest.New(t).Pool)
	now := time.Now()
	s := New(st, Config{RepoAccess: true, Now: func() time.Time { return now }})
	// Public repositories GitHub was asked about just now: the gate lets
	// anyone in without a call.
	for _, repo := range []string{"acme/a", "acme/b", "acme/c"} {
		if err := st.SaveRepoVisibility(ctx, repo, true, now); err != nil {
			t.Fatal(err)
		}
	}
	room := func(id string) letagents.Room { return letagents.Room{ID: id} }
	list := []letagents.Room{room("github.com/acme/a"), room("team"), room("github.com/acme/b"),
		room("gitlab.com/x/y"), room("github.com/acme/a"), room("github.com/acme/c")}
	ids := func(rs []letagents.Room) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	for _, tt := range []struct {
		bound           int
		read, unchecked []string
	}{
		{3, []string{"github.com/acme/a", "team", "github.com/acme/b", "gitlab.com/x/y", "github.com/acme/a", "github.com/acme/c"}, []string{}},
		{2, []string{"github.com/acme/a", "team", "github.com/acme/b", "gitlab.com/x/y", "github.com/acme/a"}, []string{"github.com/acme/c"}},
		{0, []string{"team", "gitlab.com/x/y"}, []string{"github.com/acme/a", "github.com/acme/b", "github.com/acme/a", "github.com/acme/c"}},
	} {
		read, unchecked, err := s.readable(ctx, Identity{}, list, tt.bound)
		if err != nil || !slices.Equal(ids(read), tt.read) || !slices.Equal(ids(unchecked), tt.unchecked) {
			t.Errorf("readable(bound %d) = %v, %v, %v; want %v, %v", tt.bound, ids(read), ids(unchecked), err, tt.read, tt.unchecked)
		}
	}
}
