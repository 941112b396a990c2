package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// documentedLimits says where limits.md states each limit constant of
// shared/letagents: the row whose first cell starts with row, and the
// value as its limit cell spells it, made from the constant so that a
// changed constant fails here until the page says the new value.
var documentedLimits = []struct {
	constant, row, value string
}{
	{"MaxTextBytes", "message text", fmt.Sprint(letagents.MaxTextBytes)},
	{"MaxBodyBytes", "request body", fmt.Sprint(letagents.MaxBodyBytes)},
	{"MaxWebhookBytes", "GitHub webhook delivery", fmt.Sprint(letagents.MaxWebhookBytes)},
	{"MaxSenderBytes", "sender, and every agent label", fmt.Sprint(letagents.MaxSenderBytes)},
	{"MaxTaskTitleBytes", "task title", fmt.Sprint(letagents.MaxTaskTitleBytes)},
	{"MaxNativeText", "native activity text", fmt.Sprint(letagents.MaxNativeText)},
	{"MaxTaskDescriptionBytes", "task description", fmt.Sprint(letagents.MaxTaskDescriptionBytes)},
	{"MaxClientMessageIDBytes", "`client_message_id`", fmt.Sprint(letagents.MaxClientMessageIDBytes)},
	{"MaxPRURLBytes", "`pr_url`", fmt.Sprint(letagents.MaxPRURLBytes)},
	{"MaxLeaseReasonBytes", "lease `reason`", fmt.Sprint(letagents.MaxLeaseReasonBytes)},
	{"MaxIntentReasonBytes", "board intent `reason`", fmt.Sprint(letagents.MaxIntentReasonBytes)},
	{"MinLeaseTTL", "`lease_ttl_seconds`", fmt.Sprintf("%d–", int(letagents.MinLeaseTTL/time.Second))},
	{"MaxLeaseTTL", "`lease_ttl_seconds`", fmt.Sprintf("–%d", int(letagents.MaxLeaseTTL/time.Second))},
	{"MaxReasoningTextBytes", "reasoning `summary`", fmt.Sprint(letagents.MaxReasoningTextBytes)},
	{"MaxReasoningRefBytes", "reasoning `task_id`", fmt.Sprintf("%d bytes /", letagents.MaxReasoningRefBytes)},
	{"MaxArtifactURLBytes", "artifact `url`", fmt.Sprintf("%d /", letagents.MaxArtifactURLBytes)},
	{"MaxArtifactTitleBytes", "artifact `url`", fmt.Sprintf("/ %d /", letagents.MaxArtifactTitleBytes)},
	{"MaxArtifactFieldBytes", "artifact `url`", fmt.Sprintf("/ %d bytes", letagents.MaxArtifactFieldBytes)},
	{"MaxLinkedTasks", "artifact `url`", fmt.Sprintf("%d linked tasks", letagents.MaxLinkedTasks)},
	{"DefaultPageSize", "page of messages", fmt.Sprintf("default %d", letagents.DefaultPageSize)},
	{"MaxPageSize", "page of messages", fmt.Sprintf("at most %d", letagents.MaxPageSize)},
	{"MaxPins", "pinned messages of a room", fmt.Sprint(letagents.MaxPins)},
	{"DefaultTaskPage", "page of tasks", fmt.Sprintf("default %d", letagents.DefaultTaskPage)},
	{"MaxTaskPage", "page of tasks", fmt.Sprintf("at most %d", letagents.MaxTaskPage)},
	{"DefaultArtifactPage", "artifacts `limit`", fmt.Sprintf("default %d, at most %d /", letagents.DefaultArtifactPage, letagents.MaxArtifactPage)},
	{"MaxArtifactPage", "artifacts `limit`", fmt.Sprintf("at most %d /", letagents.MaxArtifactPage)},
	{"DefaultIntentPage", "artifacts `limit`", fmt.Sprintf("/ default %d", letagents.DefaultIntentPage)},
	{"MaxIntentPage", "artifacts `limit`", fmt.Sprintf("/ default %d, at most %d", letagents.DefaultIntentPage, letagents.MaxIntentPage)},
	{"DefaultReasoningSessionPage", "reasoning sessions `limit`", fmt.Sprintf("default %d, at most %d /", letagents.DefaultReasoningSessionPage, letagents.MaxReasoningSessionPage)},
	{"MaxReasoningSessionPage", "reasoning sessions `limit`", fmt.Sprintf("at most %d /", letagents.MaxReasoningSessionPage)},
	{"DefaultReasoningUpdatePage", "reasoning sessions `limit`", fmt.Sprintf("/ default %d, at most %d", letagents.DefaultReasoningUpdatePage, letagents.MaxReasoningUpdatePage)},
	{"MaxReasoningUpdatePage", "reasoning sessions `limit`", fmt.Sprintf("at most %d |", letagents.MaxReasoningUpdatePage)},
	{"MaxSearchQueryBytes", "search `q`", fmt.Sprintf("%d bytes", letagents.MaxSearchQueryBytes)},
	{"DefaultSearchPage", "search `limit`", fmt.Sprintf("default %d", letagents.DefaultSearchPage)},
	{"MaxSearchPage", "search `limit`", fmt.Sprintf("at most %d", letagents.MaxSearchPage)},
	{"MaxSearchCursorBytes", "search `cursor`", fmt.Sprintf("%d bytes /", letagents.MaxSearchCursorBytes)},
	{"MaxPageBytes", "one page of messages", fmt.Sprint(letagents.MaxPageBytes)},
	{"DefaultPollTimeout", "long-poll `timeout`", fmt.Sprintf("default %d ms", letagents.DefaultPollTimeout.Milliseconds())},
	{"DefaultStreamMax", "open event streams", fmt.Sprintf("(%d) /", letagents.DefaultStreamMax)},
	{"DefaultRoomStreamMax", "open event streams", fmt.Sprintf("/ `LETAGENTS_STREAM_ROOM_MAX` (%d)", letagents.DefaultRoomStreamMax)},
	{"DefaultUnreadLimit", "unread take `limit`", fmt.Sprintf("default %d", letagents.DefaultUnreadLimit)},
	{"MaxUnreadLimit", "unread take `limit`", fmt.Sprintf("at most %d", letagents.MaxUnreadLimit)},
	{"MaxUnreadWithin", "unread take `answer_within_ms`", fmt.Sprintf("1–%d ms", letagents.MaxUnreadWithin.Milliseconds())},
	{"MaxTokenBytes", "a presented token", fmt.Sprintf("%d bytes", letagents.MaxTokenBytes)},
	{"MinRoomDisplayName", "room display name", fmt.Sprintf("%d–", letagents.MinRoomDisplayName)},
	{"MaxRoomDisplayName", "room display name", fmt.Sprintf("–%d characters", letagents.MaxRoomDisplayName)},
	{"DefaultParticipantPage", "participants `limit`", fmt.Sprintf("default %d, at most %d /", letagents.DefaultParticipantPage, letagents.MaxParticipantPage)},
	{"MaxParticipantPage", "participants `limit`", fmt.Sprintf("at most %d /", letagents.MaxParticipantPage)},
	{"DefaultPresencePage", "participants `limit`", fmt.Sprintf("/ default %d, at most %d", letagents.DefaultPresencePage, letagents.MaxPresencePage)},
	{"MaxPresencePage", "participants `limit`", fmt.Sprintf("/ default %d, at most %d;", letagents.DefaultPresencePage, letagents.MaxPresencePage)},
	{"MaxRecentlyOffline", "participants `limit`", fmt.Sprintf("%d recently offline", letagents.MaxRecentlyOffline)},
	{"MaxMentions", "@mentions resolved per message", fmt.Sprintf("%d distinct", letagents.MaxMentions)},
	{"MaxPresenceText", "presence `status_text`", fmt.Sprintf("%d bytes", letagents.MaxPresenceText)},
	{"MaxAgentNameBytes", "agent name", fmt.Sprintf("%d characters", letagents.MaxAgentNameBytes)},
	{"MaxLabelBytes", "display name, owner label", fmt.Sprintf("%d bytes", letagents.MaxLabelBytes)},
	{"DefaultIntentTTL", "board intent lifetime", fmt.Sprintf("default %d s", int(letagents.DefaultIntentTTL/time.Second))},
	{"MinIntentTTL", "board intent lifetime", fmt.Sprintf("%d–", int(letagents.MinIntentTTL/time.Second))},
	{"MaxIntentTTL", "board intent lifetime", fmt.Sprintf("–%d s", int(letagents.MaxIntentTTL/time.Second))},
	{"MaxHostedWait", "hosted `wait_for_messages`", fmt.Sprintf("at most %d s", int(letagents.MaxHostedWait/time.Second))},
	{"EventRetention", "room event log", fmt.Sprintf("kept %d days", int(letagents.EventRetention/(24*time.Hour)))},
}

// notClientLimits are limit-named constants of shared/letagents that
// limits.md states through a variable of configuration.md instead.
var notClientLimits = map[string]string{
	"DefaultPollMax": "LETAGENTS_POLL_MAX_MS's default (configuration.md)",
	"MinPollMax":     "LETAGENTS_POLL_MAX_MS's bounds (configuration.md)",
	"MaxPollMax":     "LETAGENTS_POLL_MAX_MS's bounds (configuration.md)",
}

// TestLimitsTableIsTheConstants: every Max…, Min… and Default… constant of
// shared/letagents is stated in limits.md with its current value.
func TestLimitsTableIsTheConstants(t *testing.T) {
	rows := tableRows(t, "limits.md", "what")
	for _, l := range documentedLimits {
		i := slices.IndexFunc(rows, func(r []string) bool { return strings.HasPrefix(r[0], l.row) })
		if i < 0 {
			t.Errorf("%s: docs/limits.md has no row %q", l.constant, l.row)
			continue
		}
		// The trailing bar lets a value be pinned to the cell's end.
		if cell := rows[i][1] + " |"; !strings.Contains(cell, l.value) {
			t.Errorf("%s: docs/limits.md's row %q says %q, want it to contain %q", l.constant, l.row, rows[i][1], l.value)
		}
	}

	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, "../shared/letagents", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					for _, name := range spec.(*ast.ValueSpec).Names {
						n := name.Name
						if !strings.HasPrefix(n, "Max") && !strings.HasPrefix(n, "Min") && !strings.HasPrefix(n, "Default") {
							continue
						}
						if _, ok := notClientLimits[n]; ok {
							continue
						}
						if !slices.ContainsFunc(documentedLimits, func(l struct{ constant, row, value string }) bool { return l.constant == n }) {
							t.Errorf("letagents.%s is a limit docs/limits.md does not state: add its row, and its line to documentedLimits", n)
						}
					}
				}
			}
		}
	}
}
