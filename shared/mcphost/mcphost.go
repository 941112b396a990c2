// Package mcphost puts the hosted MCP endpoint (mcp/server's Hosted, at
// /mcp) beside the routes of a long-running server: the poll container
// and the local runner, which can hold its waits and streams (mounted by
// server.Mount). Its sessions live in the service's database, so any
// task serves any; its bearer tokens (owner tokens, OAuth access tokens)
// are checked by the service's auth.
// Lambda functions never link it: mcp-go stays out of their binaries.
package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/mcp/server"
	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/service"
	"github.com/letagents/letagents-go/shared/store"
)

// New builds the endpoint of svc, whose sessions' servers reach the API
// at apiURL and its long-polls at pollURL ("" for apiURL). Its calls to
// the API carry each agent's own address, vouched for with the service's
// key, so that the API's per-address limits count hosted agents apart.
// authServer is the OAuth authorization server its metadata names: the
// API's public URL, or "" where the API is served on the endpoint's own
// origin.
func New(svc *service.Service, apiURL, pollURL, authServer string) (*server.Hosted, error) {
	return server.NewHosted(server.HostedConfig{APIURL: apiURL, PollURL: pollURL, Sessions: svc.Store, Events: events{svc.Store}, Watch: watch(svc),
		Origins: svc.Config.Origins(), Logger: svc.Logger, RequireAuth: svc.Config.MCPAuthRequired, AuthServer: authServer,
		Verify:        svc.Auth.BearerPrincipal,
		ClientAddress: ClientAddress(svc.Config.ProxyHops), Vouch: func(ctx context.Context, addr string) (string, error) {
			v, err := svc.Auth.VouchAddress(ctx, addr)
			if errors.Is(err, auth.ErrNoSealer) {
				return "", nil // no key, no vouching: the agents share this server's address (docs/mcp.md)
			}
			return v, err
		}})
}

// ClientAddress is the address of a request's caller behind hops proxies
// that each append the address they saw to X-Forwarded-For: the entry
// hops from the end (entries before it are the caller's own word). A
// request with fewer entries did not come through them, and is its
// connection's peer, as every request is with hops 0.
func ClientAddress(hops int) func(r *http.Request) string {
	return func(r *http.Request) string {
		peer, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			peer = r.RemoteAddr
		}
		if hops == 0 {
			return peer
		}
		var entries []string
		for _, h := range r.Header.Values("X-Forwarded-For") {
			for e := range strings.SplitSeq(h, ",") {
				entries = append(entries, strings.TrimSpace(e))
			}
		}
		if len(entries) < hops {
			return peer
		}
		if ip, err := netip.ParseAddr(entries[len(entries)-hops]); err == nil {
			return ip.String()
		}
		return peer
	}
}

// events keeps the hosted sessions' stream events in the service's
// database (mcp-go's EventStore), so that a client resumes a dropped
// stream with Last-Event-ID on whichever task it reaches: the one that
// holds the stream replays and goes on with it; another replays what was
// sent, and the client comes back for the rest.
type events struct{ store *store.Store }

func (e events) StoreEvent(ctx context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	return e.store.StoreMCPEvent(ctx, sessionID, streamID, message)
}

func (e events) ReplayEventsAfter(ctx context.Context, sessionID, lastEventID string,
	send func(eventID string, message json.RawMessage) error) (string, error) {
	stream, err := e.store.ReplayMCPEvents(ctx, sessionID, lastEventID, func(id string, m []byte) error { return send(id, m) })
	if errors.Is(err, store.ErrUnknownMCPEvent) {
		return "", fmt.Errorf("%w: %w", mcpserver.ErrUnknownEventID, err)
	}
	return stream, err
}

func (e events) PurgeSession(ctx context.Context, sessionID string) error {
	return e.store.PurgeMCPEvents(ctx, sessionID)
}

// watch rings when a hosted session's saved state changes, on any task:
// the notify hub's channel of the session, which SaveSessionState rings.
// nil where the service runs no hub (it serves no long-polls).
func watch(svc *service.Service) func(ctx context.Context, id string) (<-chan struct{}, func(), error) {
	if svc.Hub == nil {
		return nil
	}
	return func(ctx context.Context, id string) (<-chan struct{}, func(), error) {
		sub, err := svc.Hub.Subscribe(ctx, svc.Store.MCPSessionChannel(id))
		if err != nil {
			return nil, nil, err
		}
		return sub.C(), sub.Close, nil
	}
}
