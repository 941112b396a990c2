package apiclient_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/shared/wire"
)

func TestSearchCalls(t *testing.T) {
	t.Parallel()
	e, owner, sa, _, a, _ := boardEnv(t)
	ctx := testContext(t)
	for _, text := range []string{"deploy failed", "deploy fixed", "lunch"} {
		if _, err := a.Send(ctx, boardRoom, wire.SendMessage{Text: text}); err != nil {
			t.Fatal(err)
		}
	}

	q := apiclient.SearchQuery{Query: "deploy", Sender: sa.ActorLabel, Source: "agent", Since: "2000-01-01T00:00:00Z", Limit: 1}
	first, err := owner.SearchRoom(ctx, boardRoom, q)
	if err != nil || first.RoomID != boardRoom || len(first.Results) != 1 || !first.HasMore || first.NextCursor == nil {
		t.Fatalf("SearchRoom = %+v, %v; want one hit and a cursor", first, err)
	}
	got := e.api.last(t, "/search")
	if v, _ := url.ParseQuery(got.Query); got.Path != "/rooms/board/search" || v.Get("q") != "deploy" || v.Get("sender") != sa.ActorLabel ||
		v.Get("source") != "agent" || v.Get("since") != q.Since || v.Get("limit") != "1" || v.Has("until") || v.Has("thread") || v.Has("cursor") {
		t.Errorf("SearchRoom sent %s?%s", got.Path, got.Query)
	}
	q.Cursor = *first.NextCursor
	second, err := owner.SearchRoom(ctx, boardRoom, q)
	if err != nil || len(second.Results) != 1 || second.HasMore || second.Results[0].Message.ID == first.Results[0].Message.ID {
		t.Fatalf("SearchRoom, page 2 = %+v, %v; want the other hit, and the end", second, err)
	}

	all, err := owner.Search(ctx, apiclient.SearchQuery{Query: `"deploy fixed"`})
	if err != nil || len(all.Results) != 1 || all.Results[0].Message.RoomID != boardRoom || all.Results[0].Message.Text != "deploy fixed" {
		t.Fatalf("Search = %+v, %v", all, err)
	}
	if got := e.api.last(t, "/search"); got.Path != "/search" {
		t.Errorf("Search sent %s", got.Path)
	}
	if _, err := e.client("").Search(ctx, apiclient.SearchQuery{Query: "deploy"}); apiError(t, err).Status != http.StatusUnauthorized {
		t.Errorf("anonymous Search = %v, want 401", err)
	}
	if _, err := owner.SearchRoom(ctx, boardRoom, apiclient.SearchQuery{Query: "-deploy"}); apiError(t, err).Body.Code != "SEARCH_QUERY_INVALID" {
		t.Errorf("SearchRoom(-deploy) = %v, want SEARCH_QUERY_INVALID", err)
	}
}
