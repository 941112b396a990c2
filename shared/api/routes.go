package api

import "net/http"

// routes is the whole HTTP surface on one screen. Order matters where
// patterns overlap: the first match wins. Both the legacy /projects paths
// and the current /rooms paths are served, for old and new clients.
func (s *server) routes() []Route {
	return []Route{
		{GroupRooms, http.MethodPost, "/projects", s.createInviteRoom},
		{GroupRooms, http.MethodGet, "/projects/join/{code}", s.joinByCode},
		{GroupRooms, http.MethodPost, "/projects/room/{room}", s.openNamedRoom},
		{GroupRooms, http.MethodPost, "/rooms/{room}/join", s.joinRoom},
		{GroupRooms, http.MethodGet, "/projects/{room}/access", s.roomAccess},
		{GroupRooms, http.MethodPost, "/projects/{room}/code/rotate", s.rotateCode},
		{GroupRooms, http.MethodGet, "/rooms/{room}/artifacts", s.listArtifacts},
		{GroupRooms, http.MethodPost, "/rooms/{room}/artifacts", s.publishArtifact},

		{GroupAuth, http.MethodPost, "/auth/device/start", s.startDevice},
		{GroupAuth, http.MethodGet, "/auth/device/poll/{request_id}", s.pollDevice},
		{GroupAuth, http.MethodPost, "/auth/github/login", s.githubLogin},
		{GroupAuth, http.MethodGet, "/auth/github/callback", s.githubCallback},
		{GroupAuth, http.MethodGet, "/auth/session", s.session},
		{GroupAuth, http.MethodPost, "/auth/logout", s.logout},
		{GroupAuth, http.MethodPost, "/agents", s.registerAgent},
		{GroupAuth, http.MethodGet, "/agents/me", s.myAgents},

		{GroupMessages, http.MethodPost, "/projects/{room}/messages", s.sendMessage},
		{GroupMessages, http.MethodGet, "/projects/{room}/messages", s.readMessages},
		{GroupMessages, http.MethodPost, "/rooms/{room}/messages", s.sendMessage},
		{GroupMessages, http.MethodGet, "/rooms/{room}/messages", s.readMessages},

		{GroupPoll, http.MethodGet, "/projects/{room}/messages/poll", s.poll},
		{GroupPoll, http.MethodGet, "/rooms/{room}/messages/poll", s.poll},

		{GroupCoordination, http.MethodPost, "/rooms/{room}/agent-sessions", s.registerSession},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/agent-sessions/{session_id}/disconnect", s.disconnectSession},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/agent-sessions/{session_id}/native-activity", s.nativeActivity},
		{GroupCoordination, http.MethodGet, "/rooms/{room}/presence", s.presence},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/presence", s.postPresence},
		{GroupCoordination, http.MethodGet, "/rooms/{room}/participants", s.participants},

		{GroupCoordination, http.MethodGet, "/rooms/{room}/tasks", s.listTasks},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/tasks", s.createTask},
		{GroupCoordination, http.MethodGet, "/rooms/{room}/tasks/{task_id}", s.getTask},
		{GroupCoordination, http.MethodPatch, "/rooms/{room}/tasks/{task_id}", s.updateTask},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/tasks/{task_id}/lease-action", s.leaseAction},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/tasks/{task_id}/review-lease-action", s.reviewLeaseAction},
		{GroupCoordination, http.MethodGet, "/projects/{room}/tasks", s.listTasks},
		{GroupCoordination, http.MethodPost, "/projects/{room}/tasks", s.createTask},
		{GroupCoordination, http.MethodGet, "/projects/{room}/tasks/{task_id}", s.getTask},
		{GroupCoordination, http.MethodPatch, "/projects/{room}/tasks/{task_id}", s.updateTask},
		{GroupCoordination, http.MethodPost, "/projects/{room}/tasks/{task_id}/lease-action", s.leaseAction},
		{GroupCoordination, http.MethodPost, "/projects/{room}/tasks/{task_id}/review-lease-action", s.reviewLeaseAction},

		{GroupCoordination, http.MethodGet, "/rooms/{room}/board-intents", s.listIntents},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/board-intents", s.registerIntent},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/board-intents/{intent_id}/approve", s.approveIntent},
		{GroupCoordination, http.MethodPost, "/rooms/{room}/board-intents/{intent_id}/deny", s.denyIntent},
		{GroupCoordination, http.MethodGet, "/rooms/{room}/board-settings", s.boardSettings},
		{GroupCoordination, http.MethodPatch, "/rooms/{room}/board-settings", s.setBoardSettings},

		{GroupWeb, http.MethodGet, "/api/health", s.health},
		{GroupWeb, http.MethodGet, "/in/{room}", s.roomPage},
		{GroupWeb, http.MethodGet, "/", s.landingPage},
	}
}
