package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/githubhook"
	"github.com/letagents/letagents-go/shared/letagents"
)

// FollowUpCreator is the creator of the tasks GitHub's failing checks
// open, as the original names it.
const FollowUpCreator = "letagents"

// openFollowUp opens a task on the repo room's board for a failing
// check that no lease holder owns (a lease holder hears of its own), as
// the original's check-run-autotasks does: "Fix CI: <check>", accepted,
// saying what failed where. The letagents-lease check is the board's
// own verdict, never a task; and while a task of that title is open, a
// repeat failure opens no other.
func (s *Store) openFollowUp(ctx context.Context, tx pgx.Tx, ev letagents.GitHubEvent, now time.Time) error {
	if ev.EventType != letagents.GitHubCheckRun || !githubhook.Failing(ev.State) ||
		strings.EqualFold(strings.TrimSpace(ev.Title), letagents.LeaseCheckName) {
		return nil
	}
	title := "Fix CI: " + ev.Title
	if _, err := letagents.TaskTitle(title); err != nil {
		return nil // a name too long for a title: the status line still tells
	}
	var open bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM tasks WHERE room_id = $1 AND title = $2 AND status NOT IN ('done', 'cancelled'))`,
		ev.RoomID, title).Scan(&open); err != nil {
		return fmt.Errorf("find an open follow-up task: %w", err)
	}
	if open {
		return nil
	}
	var meta struct {
		AppSlug string `json:"app_slug"`
	}
	_ = json.Unmarshal(ev.Metadata, &meta) // the parser wrote it; no slug is no line
	lines := []string{"Opened from a failing GitHub check in " + strings.TrimPrefix(ev.RoomID, "github.com/") + ".",
		"Check: " + ev.Title, "Conclusion: " + ev.State}
	if ev.Branch != "" {
		lines = append(lines, "Branch: "+ev.Branch)
	}
	if ev.ObjectURL != "" {
		lines = append(lines, "URL: "+ev.ObjectURL)
	}
	if meta.AppSlug != "" {
		lines = append(lines, "App: "+meta.AppSlug)
	}
	n := NewTask{RoomID: ev.RoomID, Title: title, Description: strings.Join(lines, "\n"), CreatedBy: FollowUpCreator}
	if _, err := s.insertTask(ctx, tx, n, letagents.TaskAccepted, now); err != nil {
		return fmt.Errorf("open a follow-up task: %w", err)
	}
	return nil
}
