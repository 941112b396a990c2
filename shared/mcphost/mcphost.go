// Package mcphost puts the hosted MCP endpoint (mcp/server's Hosted, at
// /mcp) beside the routes of a long-running server: the poll container
// and the local runner, which can hold its waits and streams. Its
// sessions live in the service's database, so any task serves any.
// Lambda functions never link it: mcp-go stays out of their binaries.
package mcphost

import (
	"net/http"

	"github.com/letagents/letagents-go/mcp/server"
	"github.com/letagents/letagents-go/shared/service"
)

// New builds the endpoint of svc, whose sessions' servers reach the API
// at apiURL and its long-polls at pollURL ("" for apiURL).
func New(svc *service.Service, apiURL, pollURL string) (*server.Hosted, error) {
	return server.NewHosted(server.HostedConfig{APIURL: apiURL, PollURL: pollURL, Sessions: svc.Store,
		Origins: svc.Config.Origins(), Logger: svc.Logger})
}

// Mount serves server.HostedPath with hosted and everything else with h.
func Mount(h, hosted http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == server.HostedPath {
			hosted.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}
