package mcphost

import (
	"context"
	"testing"

	"github.com/letagents/letagents-go/shared/service/servicetest"
	"github.com/letagents/letagents-go/shared/testwait"
)

// A hosted session's saved state rings its watch, on the service's hub:
// the task holding the session's stream hears of a subscription another
// task took.
func TestWatchRingsOnSave(t *testing.T) {
	t.Parallel()
	svc, _ := servicetest.Start(t, nil, nil)
	ctx := context.Background()
	if err := svc.Store.CreateSession(ctx, "mcps_watched", ""); err != nil {
		t.Fatal(err)
	}
	w := watch(svc)
	if w == nil {
		t.Fatal("no watch on a service with a hub")
	}
	ring, stop, err := w(ctx, "mcps_watched")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := svc.Store.SaveSessionState(ctx, "mcps_watched", []byte(`{"current_room":"github.com/acme/x"}`)); err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, "the watched session's ring", ring)
}
