// Package mcphost puts the hosted MCP endpoint (mcp/server's Hosted, at
// /mcp) beside the routes of a long-running server: the poll container
// and the local runner, which can hold its waits and streams (mounted by
// server.Mount). Its sessions live in the service's database, so any
// task serves any; its bearer tokens (owner tokens, OAuth access tokens)
// are checked by the service's auth.
// Lambda functions never link it: mcp-go stays out of their binaries.
package mcphost

import (
	"github.com/letagents/letagents-go/mcp/server"
	"github.com/letagents/letagents-go/shared/service"
)

// New builds the endpoint of svc, whose sessions' servers reach the API
// at apiURL and its long-polls at pollURL ("" for apiURL). authServer is
// the OAuth authorization server its metadata names: the API's public
// URL, or "" where the API is served on the endpoint's own origin.
func New(svc *service.Service, apiURL, pollURL, authServer string) (*server.Hosted, error) {
	return server.NewHosted(server.HostedConfig{APIURL: apiURL, PollURL: pollURL, Sessions: svc.Store,
		Origins: svc.Config.Origins(), Logger: svc.Logger, RequireAuth: svc.Config.MCPAuthRequired, AuthServer: authServer,
		Verify: svc.Auth.BearerPrincipal})
}
