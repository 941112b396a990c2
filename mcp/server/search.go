package server

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

// rfc3339 is the shape of a time argument; the API parses it.
const rfc3339 = `^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})$`

// defaultSearchLimit is search_messages' page size: enough to choose
// from, few enough to read.
const defaultSearchLimit = 10

// searchTools are the tools that search messages.
func (s *Server) searchTools() []mcpserver.ServerTool {
	return []mcpserver.ServerTool{
		bind(tool("search_messages", readOnly,
			"Search the room's history by words, best matches first, instead of reading it all: who decided what, an error seen before, a "+
				"file or command mentioned. Syntax as a web search: all words must appear; \"quoted words\" in that order; -word must not "+
				"appear; a or b for either. Whole words, any case, no stemming (deploy does not find deploys). Each hit has a snippet with "+
				"the matches in **bold**; pass next_cursor back as cursor for more.",
			mcp.WithString("query", mcp.Required(), mcp.MinLength(1), mcp.MaxLength(letagents.MaxSearchQueryBytes),
				mcp.Description(`What to find, e.g. deploy "connection refused" -staging`)),
			roomIDArg,
			mcp.WithBoolean("all_rooms", mcp.Description("Search every room your signed-in account may read instead of one room (needs sign-in).")),
			mcp.WithString("sender", mcp.MaxLength(letagents.MaxSenderBytes), mcp.Description("Only messages of this sender (any case).")),
			mcp.WithString("source", mcp.Enum(letagents.SourceAgent, letagents.SourceBrowser, letagents.SourceSystem),
				mcp.Description("Only messages of this source: agent, browser (a person) or system (the server's own notices).")),
			mcp.WithString("thread_id", mcp.Pattern(messageID), mcp.Description("Only this message's thread (any message of it, msg_N); one room only.")),
			mcp.WithString("since", mcp.Pattern(rfc3339), mcp.Description("Only messages sent at or after this time (RFC 3339).")),
			mcp.WithString("until", mcp.Pattern(rfc3339), mcp.Description("Only messages sent before this time (RFC 3339).")),
			mcp.WithInteger("limit", mcp.Min(1), mcp.Max(letagents.MaxSearchPage), mcp.Description("Hits per call (default 10).")),
			mcp.WithString("cursor", mcp.MaxLength(letagents.MaxSearchCursorBytes), mcp.Description("next_cursor of the previous call, to go on."))),
			s.searchMessages),
	}
}

type searchArgs struct {
	Query    string `json:"query"`
	RoomID   string `json:"room_id"`
	AllRooms bool   `json:"all_rooms"`
	Sender   string `json:"sender"`
	Source   string `json:"source"`
	ThreadID string `json:"thread_id"`
	Since    string `json:"since"`
	Until    string `json:"until"`
	Limit    int    `json:"limit"`
	Cursor   string `json:"cursor"`
}

// searchAnswer is what search_messages returns.
type searchAnswer struct {
	Query          string      `json:"query"`
	RoomID         string      `json:"room_id,omitempty"` // "" when every room was searched
	Results        []searchHit `json:"results"`
	NextCursor     string      `json:"next_cursor,omitempty"`
	UncheckedRooms []string    `json:"unchecked_rooms,omitempty"`
	// TextsOmitted: the answer grew past its bound, so the later hits
	// carry their snippets only.
	TextsOmitted bool   `json:"texts_omitted,omitempty"`
	Hint         string `json:"hint,omitempty"`
}

// searchHit is a hit as the model reads it: the message's text cut to
// a quote's length, and the snippet with its matches in **bold**.
type searchHit struct {
	ID             string  `json:"id"`
	RoomID         string  `json:"room_id"`
	Sender         string  `json:"sender"`
	Source         *string `json:"source"`
	Timestamp      string  `json:"timestamp"`
	ThreadParentID *string `json:"thread_parent_id,omitempty"`
	Snippet        string  `json:"snippet"`
	Text           string  `json:"text,omitempty"`
	TextTruncated  bool    `json:"text_truncated,omitempty"`
}

// searchMessages searches the room named, the current one, or with
// all_rooms every room the account may read.
func (s *Server) searchMessages(ctx context.Context, a searchArgs) *mcp.CallToolResult {
	if strings.TrimSpace(a.Query) == "" {
		return fail("query is empty", "Say what to look for.")
	}
	q := apiclient.SearchQuery{Query: a.Query, Sender: a.Sender, Source: a.Source, Thread: a.ThreadID, Since: a.Since, Until: a.Until,
		Limit: defaultSearchLimit, Cursor: a.Cursor}
	if a.Limit > 0 {
		q.Limit = a.Limit
	}
	var (
		res wire.SearchResults
		err error
	)
	if a.AllRooms {
		if a.RoomID != "" {
			return fail("room_id and all_rooms both given", "Give room_id to search one room, or all_rooms to search every room, not both.")
		}
		res, err = s.api.Search(ctx, q)
	} else {
		room, bad := s.roomFor(a.RoomID)
		if bad != nil {
			return bad
		}
		res, err = s.api.SearchRoom(ctx, room, q)
	}
	if err != nil {
		return s.apiFailure(ctx, err)
	}
	return result(searchResult(res))
}

// searchResult shapes an API answer for the model, within maxOutputBytes
// as far as texts go: past it, hits keep their snippets only.
func searchResult(res wire.SearchResults) searchAnswer {
	ans := searchAnswer{Query: res.Query, RoomID: res.RoomID, Results: make([]searchHit, 0, len(res.Results)), UncheckedRooms: res.UncheckedRooms}
	size := 0
	for _, h := range res.Results {
		m := h.Message
		var snip strings.Builder
		for _, p := range h.Snippet {
			if p.Match {
				snip.WriteString("**" + p.Text + "**")
			} else {
				snip.WriteString(p.Text)
			}
		}
		hit := searchHit{ID: m.ID, RoomID: m.RoomID, Sender: m.Sender, Source: m.Source, Timestamp: m.Timestamp,
			ThreadParentID: m.ThreadParentID, Snippet: snip.String()}
		if !ans.TextsOmitted {
			hit.Text = m.Text
			if r := []rune(m.Text); len(r) > letagents.QuoteMaxChars {
				hit.Text, hit.TextTruncated = string(r[:letagents.QuoteMaxChars]), true
			}
			b, _ := json.Marshal(hit)
			if size += len(b); size > maxOutputBytes {
				ans.TextsOmitted, hit.Text, hit.TextTruncated = true, "", false
			}
		}
		ans.Results = append(ans.Results, hit)
	}
	if res.NextCursor != nil {
		ans.NextCursor = *res.NextCursor
		ans.Hint = "More hits follow: call search_messages again with the same arguments and cursor = next_cursor."
	}
	if len(ans.Results) == 0 {
		ans.Hint = "Nothing found. Try fewer or other words: words match whole (deploy does not find deploys)."
	}
	return ans
}
