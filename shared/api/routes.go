package api

import "net/http"

// template.yaml's routes (the HTTP API's OpenAPI body) are written from
// this table: run `make template` (or go generate) after changing it.
//go:generate go run ../../infra/routegen -template ../../template.yaml

// routes is the whole HTTP surface on one screen. Order matters where
// patterns overlap: the first match wins. Both the legacy /projects paths
// and the current /rooms paths are served, for old and new clients. Each
// route declares its gate (gate.go): what its caller needs of the room of
// the path, checked before the handler runs.
func (s *server) routes() []Route {
	return []Route{
		{GroupRooms, http.MethodGet, "/projects", public, s.listRooms},
		{GroupRooms, http.MethodPost, "/projects", public, s.createInviteRoom},
		{GroupRooms, http.MethodGet, "/projects/join/{code}", public, s.joinByCode},
		{GroupRooms, http.MethodPost, "/projects/room/{room}", opener, s.openNamedRoom},
		{GroupRooms, http.MethodPost, "/rooms/{room}/join", joiner, s.joinRoom},
		{GroupRooms, http.MethodGet, "/rooms/{room}/info", member, s.roomInfo},
		{GroupRooms, http.MethodGet, "/projects/{room}/access", member, s.roomAccess},
		{GroupRooms, http.MethodPost, "/projects/{room}/code/rotate", admin, s.rotateCode},
		{GroupRooms, http.MethodGet, "/rooms/{room}/artifacts", member, s.listArtifacts},
		{GroupRooms, http.MethodPost, "/rooms/{room}/artifacts", member, s.publishArtifact},
		{GroupRooms, http.MethodGet, "/rooms/{room}/events", member, s.roomEvents},

		{GroupAuth, http.MethodPost, "/auth/device/start", public, s.startDevice},
		{GroupAuth, http.MethodGet, "/auth/device/poll/{request_id}", public, s.pollDevice},
		{GroupAuth, http.MethodPost, "/auth/github/login", public, s.githubLogin},
		{GroupAuth, http.MethodGet, "/auth/github/callback", public, s.githubCallback},
		{GroupAuth, http.MethodGet, "/auth/session", public, s.session},
		{GroupAuth, http.MethodPost, "/auth/logout", public, s.logout},
		{GroupAuth, http.MethodGet, "/.well-known/oauth-authorization-server", public, s.oauthMetadata},
		{GroupAuth, http.MethodPost, "/oauth/register", public, s.oauthRegister},
		{GroupAuth, http.MethodGet, "/oauth/authorize", public, s.oauthAuthorize},
		{GroupAuth, http.MethodGet, "/oauth/consent", public, s.oauthConsent},
		{GroupAuth, http.MethodGet, "/oauth/decide", public, s.oauthDecide},
		{GroupAuth, http.MethodPost, "/oauth/token", public, s.oauthToken},
		{GroupAuth, http.MethodPost, "/agents", public, s.registerAgent},
		{GroupAuth, http.MethodGet, "/agents/me", public, s.myAgents},
		{GroupAuth, http.MethodPost, "/webhooks/github", public, s.githubWebhook},
		{GroupAuth, http.MethodGet, appCallbackPath, public, s.githubAppCallback},
		// With the webhook, where the GitHub App's secret is read.
		{GroupAuth, http.MethodGet, "/rooms/{room}/integrations/github", member, s.githubIntegration},
		{GroupAuth, http.MethodPost, "/rooms/{room}/integrations/github/install-url", admin, s.githubInstallURL},

		{GroupMessages, http.MethodPost, "/projects/{room}/messages", sender, s.sendMessage},
		{GroupMessages, http.MethodGet, "/projects/{room}/messages", member, s.readMessages},
		{GroupMessages, http.MethodPost, "/rooms/{room}/messages", sender, s.sendMessage},
		{GroupMessages, http.MethodGet, "/rooms/{room}/messages", member, s.readMessages},
		{GroupMessages, http.MethodGet, "/rooms/{room}/search", member, s.searchRoom},
		{GroupMessages, http.MethodGet, "/search", public, s.searchRooms},
		{GroupMessages, http.MethodPost, "/rooms/{room}/messages/unread", member, s.takeUnread},
		{GroupMessages, http.MethodGet, "/rooms/{room}/messages/{message_id}/deliveries", member, s.messageDeliveries},
		{GroupMessages, http.MethodPost, "/rooms/{room}/messages/{message_id}/pin", admin, s.pinMessage},
		{GroupMessages, http.MethodDelete, "/rooms/{room}/messages/{message_id}/pin", admin, s.unpinMessage},
		{GroupMessages, http.MethodGet, "/rooms/{room}/pins", member, s.listPins},

		{GroupPoll, http.MethodGet, "/projects/{room}/messages/poll", member, s.poll},
		{GroupPoll, http.MethodGet, "/rooms/{room}/messages/poll", member, s.poll},
		{GroupPoll, http.MethodGet, "/projects/{room}/messages/stream", member, s.stream},
		{GroupPoll, http.MethodGet, "/rooms/{room}/messages/stream", member, s.stream},

		{GroupCoordination, http.MethodPost, "/rooms/{room}/agent-sessions", member, s.registerSession},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/agent-sessions/{session_id}/disconnect", member, s.disconnectSession},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/agent-sessions/{session_id}/native-activity", member, s.nativeActivity},
		{GroupCoordination, http.MethodGet, "/rooms/{room}/presence", member, s.presence},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/presence", member, s.postPresence},
		{GroupCoordination, http.MethodGet, "/rooms/{room}/participants", member, s.participants},

		{GroupCoordination, http.MethodGet, "/rooms/{room}/tasks", member, s.listTasks},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/tasks", member, s.createTask},
		{GroupCoordination, http.MethodGet, "/rooms/{room}/tasks/{task_id}", member, s.getTask},
		{GroupCoordination, http.MethodPatch, "/rooms/{room}/tasks/{task_id}", member, s.updateTask},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/tasks/{task_id}/lease-action", member, s.leaseAction},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/tasks/{task_id}/review-lease-action", member, s.reviewLeaseAction},
		{GroupCoordination, http.MethodGet, "/projects/{room}/tasks", member, s.listTasks},
		{GroupCoordination, http.MethodPost, "/projects/{room}/tasks", member, s.createTask},
		{GroupCoordination, http.MethodGet, "/projects/{room}/tasks/{task_id}", member, s.getTask},
		{GroupCoordination, http.MethodPatch, "/projects/{room}/tasks/{task_id}", member, s.updateTask},
		{GroupCoordination, http.MethodPost, "/projects/{room}/tasks/{task_id}/lease-action", member, s.leaseAction},
		{GroupCoordination, http.MethodPost, "/projects/{room}/tasks/{task_id}/review-lease-action", member, s.reviewLeaseAction},

		{GroupCoordination, http.MethodGet, "/rooms/{room}/reasoning", member, s.listReasoning},
		{GroupCoordination, http.MethodGet, "/rooms/{room}/reasoning-sessions", member, s.listReasoning},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/reasoning-sessions", member, s.createReasoning},
		{GroupCoordination, http.MethodGet, "/rooms/{room}/reasoning-sessions/{session_id}", member, s.getReasoning},
		{GroupCoordination, http.MethodPatch, "/rooms/{room}/reasoning-sessions/{session_id}", member, s.changeReasoning},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/reasoning-sessions/{session_id}/updates", member, s.addReasoningUpdate},

		{GroupCoordination, http.MethodGet, "/rooms/{room}/board-intents", member, s.listIntents},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/board-intents", member, s.registerIntent},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/board-intents/{intent_id}/approve", admin, s.approveIntent},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/board-intents/{intent_id}/deny", admin, s.denyIntent},
		{GroupCoordination, http.MethodGet, "/rooms/{room}/board-settings", member, s.boardSettings},
		{GroupCoordination, http.MethodPatch, "/rooms/{room}/board-settings", admin, s.setBoardSettings},

		// After every /rooms/{room}/… route, which would otherwise lose
		// their suffixes to a room id: /rooms/resolve/x/messages reads the
		// messages of room resolve/x, as in the original.
		{GroupRooms, http.MethodPatch, "/rooms/{room}", admin, s.renameRoom},
		{GroupRooms, http.MethodGet, "/rooms/resolve/{room}", public, s.resolveRoom},
		{GroupRooms, http.MethodGet, "/api/rooms/resolve/{room}", public, s.apiResolveRoom},
		{GroupAuth, http.MethodGet, "/api/rooms/{room}/integrations/github", member, s.githubIntegration},
		{GroupAuth, http.MethodPost, "/api/rooms/{room}/integrations/github/install-url", admin, s.githubInstallURL},

		{GroupWeb, http.MethodGet, "/api/health", public, s.health},
		{GroupWeb, http.MethodGet, "/favicon.svg", public, s.favicon},
		{GroupWeb, http.MethodGet, "/favicon.ico", public, s.favicon},
		{GroupWeb, http.MethodGet, "/in/{room}", public, s.roomPage},
		{GroupWeb, http.MethodGet, "/js/{file}", public, s.script},
		{GroupWeb, http.MethodGet, "/", public, s.landingPage},
		{GroupWeb, http.MethodGet, "/docs", public, s.docsIndex},
		{GroupWeb, http.MethodGet, "/docs/{doc}", public, s.docsPage},
		{GroupWeb, http.MethodGet, "/github.com/{owner}/{repo}", public, s.repoPage("github.com")},
		{GroupWeb, http.MethodGet, "/gitlab.com/{owner}/{repo}", public, s.repoPage("gitlab.com")},
		{GroupWeb, http.MethodGet, "/bitbucket.org/{owner}/{repo}", public, s.repoPage("bitbucket.org")},
	}
}
