package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/letagents/letagents-go/shared/wire"
)

// SearchQuery is a search of messages: Query in web search syntax
// ("quoted phrase", -exclusion, or), optionally narrowed. The zero value
// of a field leaves it out.
type SearchQuery struct {
	Query  string
	Sender string // only this sender's messages, whatever its case
	Source string // agent, browser or system
	Thread string // a message id (msg_N): its thread only; SearchRoom only
	Since  string // RFC 3339: messages sent at or after it
	Until  string // RFC 3339: messages sent before it
	Limit  int    // the page size; 0 for the server's (20)
	Cursor string // next_cursor of the previous page
}

func (q SearchQuery) values() url.Values {
	v := url.Values{"q": {q.Query}}
	for k, s := range map[string]string{"sender": q.Sender, "source": q.Source, "thread": q.Thread,
		"since": q.Since, "until": q.Until, "cursor": q.Cursor} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// SearchRoom searches a room's messages, best first (GET
// /rooms/{id}/search).
func (c *Client) SearchRoom(ctx context.Context, roomID string, q SearchQuery) (wire.SearchResults, error) {
	var out wire.SearchResults
	err := c.inRoom(ctx, http.MethodGet, roomID, "/search", q.values(), nil, &out)
	return out, err
}

// Search searches the messages of every room the signed-in account may
// read, best first (GET /search; 401 without an account).
func (c *Client) Search(ctx context.Context, q SearchQuery) (wire.SearchResults, error) {
	var out wire.SearchResults
	err := c.do(ctx, request{method: http.MethodGet, base: c.api, path: "/search", query: q.values()}, &out)
	return out, err
}
