package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
)

// GitHub events are pruned oldest first, a batch at a time; a delivery's
// record only once no event of it is left, and a delivery that logged
// none (ignored) as soon as it is old enough. The liveness sweeper's test
// (shared/liveness) holds the times; this one the batches and the order.
func TestPruneGitHubInBatches(t *testing.T) {
	t.Parallel()
	s, pool := newStoreAndPool(t)
	ctx := context.Background()
	const repo = "github.com/acme/pruned"
	if _, _, err := s.EnsureRoom(ctx, repo); err != nil {
		t.Fatal(err)
	}
	received := time.Now().Add(-time.Hour)
	for i, room := range []string{repo, repo, repo, "github.com/acme/unopened"} {
		ev := &letagents.GitHubEvent{RoomID: room, EventType: letagents.GitHubPush, Action: "pushed", ObjectID: fmt.Sprint(i),
			Metadata: []byte(`{}`), Line: "pushed"}
		if _, err := s.TakeGitHubDelivery(ctx, store.GitHubDelivery{ID: fmt.Sprintf("d%d", i), EventName: "push", RoomID: room,
			ReceivedAt: received}, ev); err != nil {
			t.Fatal(err)
		}
	}
	left := func(table string) string {
		t.Helper()
		var got string
		col := map[string]string{"github_events": "github_object_id", "github_deliveries": "delivery_id"}[table]
		if err := pool.QueryRow(ctx, `SELECT coalesce(string_agg(`+col+`, ',' ORDER BY `+col+`), '') FROM `+table).Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	later := time.Now().Add(time.Minute)
	for _, step := range []struct {
		name               string
		prune              func(context.Context, time.Time, int) (int, error)
		before             time.Time
		want               int
		events, deliveries string // left after the step
	}{
		{"no event is older", s.PruneGitHubEvents, received, 0, "0,1,2", "d0,d1,d2,d3"},
		{"the ignored delivery, alone without events", s.PruneGitHubDeliveries, later, 1, "0,1,2", "d0,d1,d2"},
		{"a batch of the oldest events", s.PruneGitHubEvents, later, 2, "2", "d0,d1,d2"},
		{"their deliveries, a batch", s.PruneGitHubDeliveries, later, 2, "2", "d2"},
		{"the last event", s.PruneGitHubEvents, later, 1, "", "d2"},
		{"the last delivery", s.PruneGitHubDeliveries, later, 1, "", ""},
		{"nothing left", s.PruneGitHubDeliveries, later, 0, "", ""},
	} {
		n, err := step.prune(ctx, step.before, 2)
		if err != nil || n != step.want {
			t.Errorf("%s: pruned %d, %v; want %d", step.name, n, err, step.want)
		}
		if ev, dl := left("github_events"), left("github_deliveries"); ev != step.events || dl != step.deliveries {
			t.Errorf("%s: events %q and deliveries %q left, want %q and %q", step.name, ev, dl, step.events, step.deliveries)
		}
	}
}
