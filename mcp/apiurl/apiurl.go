// Package apiurl is where the LetAgents API is, for the MCP server and the
// hook alike: the default base URL and what a base URL must be. It needs
// no HTTP client, so that the hook process can use it before net/http is
// initialised (mcp/letagents/internal/hookcmd).
package apiurl

import (
	"errors"
	"net/url"
)

// Default is where the API is when LETAGENTS_API_URL is unset: the local
// runner's address.
const Default = "http://localhost:3001"

// Check says what is wrong with v as a base URL of the API (it must be
// http or https and name a host), or nil.
func Check(v string) error {
	if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want an http(s) URL")
	}
	return nil
}
