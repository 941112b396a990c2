package main

// The suite: requests in order, each sent to both servers. Later requests
// use what earlier ones were handed ({room} is the invite room the first
// request creates, on each server its own). Rooms are fresh on both
// sides, so message and task numbers (msg_1, task_1) are written as
// they are; a request that is expected to be refused by one side only is
// sent to a room of its own ({lroom}), so that it cannot shift the
// numbering the other requests rely on.

// call starts a request; the methods below add to it.
func call(family, name, method, path string) request {
	return request{Family: family, Name: name, Method: method, Path: path}
}

func (r request) body(s string) request  { r.Body = s; return r }
func (r request) typed(t string) request { r.Type = t; return r }
func (r request) bearer(v string) request {
	r.Bearer = v
	return r
}
func (r request) cookie(v string) request { r.Cookie = v; return r }
func (r request) stream() request         { r.Stream = true; return r }

func (r request) header(k, v string) request {
	h := map[string]string{k: v}
	for kk, vv := range r.Header {
		h[kk] = vv
	}
	r.Header = h
	return r
}

// save keeps response values: pairs of var name and dotted path.
func (r request) save(pairs ...string) request {
	s := map[string]string{}
	for k, v := range r.Save {
		s[k] = v
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		s[pairs[i]] = pairs[i+1]
	}
	r.Save = s
	return r
}

// Rooms no server knows: an invite code never issued and a repo room.
const (
	noCode   = "ZZZZ-ZZZZ-ZZZZ"
	repoRoom = "github.com/compat/repo"
)

// sessionCreds is the body fragment that presents agent session a.
const sessionCreds = `"agent_session_id":"{sess_a}","agent_session_token":"{sess_a_token}"`

func suite() []request {
	var s []request
	for _, part := range [][]request{
		healthRequests(), roomRequests(), resolveRequests(), messageRequests(), pollRequests(),
		limitRequests(), authRequests(), agentRequests(), sessionRequests(), taskRequests(),
		boardRequests(), artifactRequests(), streamRequests(), notFoundRequests(),
	} {
		s = append(s, part...)
	}
	return s
}

func healthRequests() []request {
	const f = "health"
	return []request{
		call(f, "health", "GET", "/api/health"),
		call(f, "landing page", "GET", "/"),
		call(f, "docs page", "GET", "/docs"),
	}
}

func roomRequests() []request {
	const f = "rooms"
	return []request{
		call(f, "create invite room", "POST", "/projects").save("room", "id"),
		call(f, "create invite room as A", "POST", "/projects").bearer("token_a").save("aroom", "id"),
		call(f, "create invite room, stale bearer", "POST", "/projects").bearer("stale").save("stale_room", "id"),
		call(f, "create invite room, body ignored", "POST", "/projects").body(`{"name":"ignored"}`).save("room4", "id"),
		call(f, "create quiet room", "POST", "/projects").save("quiet", "id"),
		call(f, "create limits room", "POST", "/projects").save("lroom", "id"),
		call(f, "join by code", "GET", "/projects/join/{room}"),
		call(f, "join by code, lower case", "GET", "/projects/join/{room|lower}"),
		call(f, "join by unknown code", "GET", "/projects/join/"+noCode),
		call(f, "join by malformed code", "GET", "/projects/join/not-a-code"),
		call(f, "open named room", "POST", "/projects/room/compat-named"),
		call(f, "open named room again", "POST", "/projects/room/compat-named"),
		call(f, "open named room, other case", "POST", "/projects/room/Compat-Named"),
		call(f, "open named room as A", "POST", "/projects/room/compat-named").bearer("token_a"),
		call(f, "open named room, unissued invite code (squatting)", "POST", "/projects/room/QQQQ-WWWW-EEEE"),
		call(f, "open named room, issued invite code", "POST", "/projects/room/{room}"),
		call(f, "open repo room anonymously", "POST", "/projects/room/github.com%2Fcompat%2Frepo"),
		call(f, "open repo room by clone URL", "POST", "/projects/room/https%3A%2F%2Fgithub.com%2FCompat%2FRepo.git"),
		call(f, "join named room", "POST", "/rooms/compat-named/join"),
		call(f, "join named room as A", "POST", "/rooms/compat-named/join").bearer("token_a"),
		call(f, "join invite room", "POST", "/rooms/{room}/join"),
		call(f, "join invite room, lower case", "POST", "/rooms/{room|lower}/join"),
		call(f, "join invite room as A", "POST", "/rooms/{room}/join").bearer("token_a"),
		call(f, "join invite room, stale bearer", "POST", "/rooms/{room}/join").bearer("stale"),
		call(f, "join invite room, B's browser session", "POST", "/rooms/{room}/join").cookie("cookie_b"),
		call(f, "join unknown invite code", "POST", "/rooms/"+noCode+"/join"),
		call(f, "join repo room anonymously", "POST", "/rooms/"+repoRoom+"/join"),
		call(f, "join repo room, stale bearer", "POST", "/rooms/"+repoRoom+"/join").bearer("stale"),
		call(f, "join named room with an encoded slash", "POST", "/rooms/compat%2Fslashed/join"),
		call(f, "join new named room", "POST", "/rooms/compat-joined/join"),
		call(f, "join, empty room id", "POST", "/rooms//join"),
		call(f, "access, anonymous", "GET", "/projects/{room}/access"),
		call(f, "access, admin A", "GET", "/projects/{aroom}/access").bearer("token_a"),
		call(f, "access, other account B", "GET", "/projects/{aroom}/access").bearer("token_b"),
		call(f, "access, stale bearer", "GET", "/projects/{aroom}/access").bearer("stale"),
		call(f, "access, named room", "GET", "/projects/compat-named/access"),
		call(f, "access, unknown room", "GET", "/projects/"+noCode+"/access"),
		call(f, "list rooms anonymously", "GET", "/projects"),
		call(f, "list rooms as A", "GET", "/projects").bearer("token_a"),
		call(f, "list rooms, stale bearer", "GET", "/projects").bearer("stale"),
		call(f, "rename anonymously", "PATCH", "/rooms/{aroom}").body(`{"display_name":"Renamed"}`),
		call(f, "rename as non-admin B", "PATCH", "/rooms/{aroom}").body(`{"display_name":"Renamed"}`).bearer("token_b"),
		call(f, "rename, stale bearer", "PATCH", "/rooms/{aroom}").body(`{"display_name":"Renamed"}`).bearer("stale"),
		call(f, "rename as admin A", "PATCH", "/rooms/{aroom}").body(`{"display_name":"Compat Renamed"}`).bearer("token_a"),
		call(f, "rename to blank", "PATCH", "/rooms/{aroom}").body(`{"display_name":"  "}`).bearer("token_a"),
		call(f, "rename without a name", "PATCH", "/rooms/{aroom}").body(`{}`).bearer("token_a"),
		call(f, "rename to a long name", "PATCH", "/rooms/{aroom}").body(`{"display_name":"{x*300}"}`).bearer("token_a"),
		call(f, "rename unknown room", "PATCH", "/rooms/"+noCode).body(`{"display_name":"x"}`).bearer("token_a"),
		call(f, "rotate anonymously", "POST", "/projects/{aroom}/code/rotate"),
		call(f, "rotate as non-admin B", "POST", "/projects/{aroom}/code/rotate").bearer("token_b"),
		call(f, "rotate a named room", "POST", "/projects/compat-named/code/rotate").bearer("token_a"),
		call(f, "rotate unknown room", "POST", "/projects/"+noCode+"/code/rotate").bearer("token_a"),
		call(f, "rotate as admin A", "POST", "/projects/{aroom}/code/rotate").bearer("token_a").save("aroom2", "id"),
		call(f, "join by the rotated-away code", "GET", "/projects/join/{aroom}"),
		call(f, "join by the new code", "GET", "/projects/join/{aroom2}"),
	}
}

func resolveRequests() []request {
	const f = "resolve"
	return []request{
		call(f, "resolve invite code", "GET", "/rooms/resolve/{room}"),
		call(f, "resolve invite code, lower case", "GET", "/rooms/resolve/{room|lower}"),
		call(f, "resolve named room", "GET", "/rooms/resolve/compat-named"),
		call(f, "resolve repo locator", "GET", "/rooms/resolve/github.com%2FCompat%2FRepo"),
		call(f, "resolve ssh remote", "GET", "/rooms/resolve/git%40github.com%3ACompat%2FRepo.git"),
		call(f, "api resolve invite code", "GET", "/api/rooms/resolve/{room}"),
		call(f, "api resolve repo room", "GET", "/api/rooms/resolve/"+repoRoom),
		call(f, "room page", "GET", "/in/{room}"),
		call(f, "room page, lower case", "GET", "/in/{room|lower}"),
		call(f, "named room page", "GET", "/in/compat-named"),
		call(f, "repo room page anonymously", "GET", "/in/"+repoRoom),
		call(f, "provider path redirect", "GET", "/github.com/Compat/Repo"),
		call(f, "gitlab path redirect", "GET", "/gitlab.com/Compat/Repo"),
		call(f, "unknown provider path", "GET", "/example.org/compat/repo"),
	}
}

func messageRequests() []request {
	const f = "messages"
	send := func(name, body string) request {
		return call(f, name, "POST", "/rooms/{room}/messages").body(body)
	}
	// Requests one side may take and the other refuse go to {lroom}, so
	// that they cannot shift the numbering of {room}.
	refused := func(name, body string) request {
		return call(f, name, "POST", "/rooms/{lroom}/messages").body(body)
	}
	read := func(name, query string) request {
		return call(f, name, "GET", "/rooms/{room}/messages"+query)
	}
	return []request{
		send("send", `{"sender":"alice","text":"hello"}`),
		send("send second", `{"sender":"bob","text":"second"}`),
		call(f, "send on the legacy path", "POST", "/projects/{room}/messages").body(`{"sender":"carol","text":"third"}`),
		send("send a reply", `{"sender":"bob","text":"a reply","reply_to":"msg_1"}`),
		send("send, thread_parent_id", `{"sender":"bob","text":"threaded","thread_parent_id":"msg_1"}`),
		send("send, browser session", `{"sender":"Compat A","text":"from the page"}`).cookie("cookie_a"),
		send("send, stale bearer", `{"sender":"dave","text":"stale bearer"}`).bearer("stale"),
		refused("send, reply to unknown message", `{"sender":"bob","text":"x","reply_to":"msg_999"}`),
		refused("send, reply to a malformed id", `{"sender":"bob","text":"x","reply_to":"nope"}`),
		refused("send without sender", `{"text":"x"}`),
		refused("send without text", `{"sender":"alice"}`),
		refused("send empty text", `{"sender":"alice","text":""}`),
		refused("send blank sender", `{"sender":"  ","text":"x"}`),
		refused("send numeric text", `{"sender":"alice","text":42}`),
		refused("send numeric sender", `{"sender":7,"text":"x"}`),
		refused("send, unknown prompt kind", `{"sender":"alice","text":"x","agent_prompt_kind":"bogus"}`),
		refused("send malformed JSON", `{"sender":`),
		refused("send a JSON array", `[]`),
		refused("send as text/plain", `sender=alice`).typed("text/plain"),
		call(f, "send, no body", "POST", "/rooms/{lroom}/messages"),
		call(f, "send to unknown room", "POST", "/rooms/"+noCode+"/messages").body(`{"sender":"a","text":"x"}`),
		call(f, "send to unknown named room", "POST", "/rooms/compat-never-opened/messages").body(`{"sender":"a","text":"x"}`),
		call(f, "send to repo room anonymously", "POST", "/rooms/"+repoRoom+"/messages").body(`{"sender":"a","text":"x"}`),
		read("read", ""),
		call(f, "read on the legacy path", "GET", "/projects/{room}/messages"),
		read("read, limit=2", "?limit=2"),
		read("read, limit=0", "?limit=0"),
		read("read, limit=-3", "?limit=-3"),
		read("read, limit=abc", "?limit=abc"),
		read("read, limit=1000", "?limit=1000"),
		read("read, after=msg_2", "?after=msg_2"),
		read("read, after=msg_2&limit=1", "?after=msg_2&limit=1"),
		read("read, after=msg_999", "?after=msg_999"),
		read("read, after=garbage", "?after=garbage"),
		read("read, after=2", "?after=2"),
		read("read, after empty", "?after="),
		read("read, before=latest", "?before=latest"),
		read("read, before=latest&limit=2", "?before=latest&limit=2"),
		read("read, before=msg_3&limit=1", "?before=msg_3&limit=1"),
		read("read, before=msg_1", "?before=msg_1"),
		read("read, before=garbage", "?before=garbage"),
		read("read, after and before", "?after=msg_1&before=latest&limit=2"),
		read("read, include_prompt_only=1", "?include_prompt_only=1"),
		read("read, stale bearer", "").bearer("stale"),
		read("read, A's owner token", "").bearer("token_a"),
		call(f, "read, lower-case code", "GET", "/rooms/{room|lower}/messages"),
		call(f, "read on the legacy path, after=msg_1&limit=1", "GET", "/projects/{room}/messages?after=msg_1&limit=1"),
		call(f, "read named room", "GET", "/rooms/compat-named/messages"),
		call(f, "read unknown room", "GET", "/rooms/"+noCode+"/messages"),
		call(f, "read unknown room, legacy path", "GET", "/projects/"+noCode+"/messages"),
		call(f, "read repo room anonymously", "GET", "/rooms/"+repoRoom+"/messages"),
	}
}

func pollRequests() []request {
	const f = "poll"
	poll := func(name, room, query string) request {
		return call(f, name, "GET", "/rooms/"+room+"/messages/poll"+query)
	}
	return []request{
		poll("poll with messages waiting", "{room}", "?after=msg_1"),
		poll("poll, limit=1", "{room}", "?after=msg_1&limit=1"),
		poll("poll, limit=abc", "{room}", "?after=msg_1&limit=abc"),
		poll("poll, timeout=abc", "{room}", "?after=msg_1&timeout=abc"),
		poll("poll, timeout=-5", "{room}", "?after=msg_1&timeout=-5"),
		poll("poll, after=garbage", "{room}", "?after=garbage&timeout=1000"),
		poll("poll quiet room until timeout", "{quiet}", "?timeout=1000"),
		poll("poll quiet room, timeout=0", "{quiet}", "?timeout=0"),
		poll("poll quiet room, after=msg_5", "{quiet}", "?after=msg_5&timeout=1000"),
		call(f, "poll on the legacy path", "GET", "/projects/{room}/messages/poll?after=msg_1"),
		call(f, "poll quiet room on the legacy path", "GET", "/projects/{quiet}/messages/poll?timeout=1000"),
		poll("poll, stale bearer", "{room}", "?after=msg_1").bearer("stale"),
		poll("poll, unknown agent session headers", "{room}", "?after=msg_1").
			header("X-LetAgents-Agent-Session-Id", "agent_session_999").header("X-LetAgents-Agent-Session-Token", "{stale}"),
		poll("poll unknown room", noCode, "?timeout=1000"),
		call(f, "poll unknown room, legacy path", "GET", "/projects/"+noCode+"/messages/poll?timeout=1000"),
		poll("poll repo room anonymously", repoRoom, "?timeout=1000"),
	}
}

// limitRequests go to a room of their own: one side may take a message the
// other refuses.
func limitRequests() []request {
	const f = "limits"
	send := func(name, body string) request {
		return call(f, name, "POST", "/rooms/{lroom}/messages").body(body)
	}
	return []request{
		send("text of 32768 bytes", `{"sender":"alice","text":"{x*32768}"}`),
		send("text of 40000 bytes", `{"sender":"alice","text":"{x*40000}"}`),
		send("sender of 300 bytes", `{"sender":"{x*300}","text":"x"}`),
		send("client_message_id of 300 bytes", `{"sender":"alice","text":"x","client_message_id":"{x*300}"}`),
		send("body of 300000 bytes", `{"sender":"alice","text":"{x*300000}"}`),
		send("auto prompt without text", `{"sender":"alice","text":"","agent_prompt_kind":"auto"}`),
		send("sender letagents", `{"sender":"letagents","text":"impersonating the system"}`),
		send("A's owner token without a session", `{"sender":"alice","text":"x"}`).bearer("token_a"),
		call(f, "task title of 5000 bytes", "POST", "/rooms/{lroom}/tasks").body(`{"title":"{x*5000}","created_by":"alice"}`),
		call(f, "read the limits room", "GET", "/rooms/{lroom}/messages"),
	}
}

func authRequests() []request {
	const f = "auth"
	session := func(name string) request { return call(f, name, "GET", "/auth/session") }
	return []request{
		session("session, anonymous"),
		session("session, owner token").bearer("token_a"),
		session("session, browser cookie").cookie("cookie_a"),
		session("session, stale bearer").bearer("stale"),
		session("session, stale cookie").cookie("stale"),
		session("session, empty bearer").header("Authorization", "Bearer "),
		session("session, basic auth").header("Authorization", "Basic Zm9vOmJhcg=="),
		call(f, "logout, anonymous", "POST", "/auth/logout"),
		call(f, "logout, stale bearer", "POST", "/auth/logout").bearer("stale"),
		call(f, "logout, B's browser session", "POST", "/auth/logout").cookie("cookie_b"),
		session("session after logout").cookie("cookie_b"),
		call(f, "device flow start", "POST", "/auth/device/start"),
		call(f, "device flow poll, unknown request", "GET", "/auth/device/poll/unknown-request"),
		call(f, "web login", "POST", "/auth/github/login"),
		call(f, "web callback without code", "GET", "/auth/github/callback"),
		call(f, "web callback, unknown state", "GET", "/auth/github/callback?code=x&state=y"),
	}
}

func agentRequests() []request {
	const f = "agents"
	register := func(name, bearer, body string) request {
		return call(f, name, "POST", "/agents").bearer(bearer).body(body)
	}
	return []request{
		call(f, "my agents, anonymous", "GET", "/agents/me"),
		call(f, "my agents, stale bearer", "GET", "/agents/me").bearer("stale"),
		call(f, "my agents, none yet", "GET", "/agents/me").bearer("token_a"),
		call(f, "my agents, browser cookie", "GET", "/agents/me").cookie("cookie_a"),
		call(f, "register, anonymous", "POST", "/agents").body(`{"name":"bot"}`),
		register("register, stale bearer", "stale", `{"name":"bot"}`),
		register("register without a name", "token_a", `{}`),
		register("register a blank name", "token_a", `{"name":"  "}`),
		register("register", "token_a", `{"name":"bot","display_name":"Bot"}`).save("agent_a", "id"),
		register("register again, new display name", "token_a", `{"name":"bot","display_name":"Bot Two"}`),
		register("register for B", "token_b", `{"name":"bot"}`).save("agent_b", "id"),
		register("register a long name", "token_a", `{"name":"{x*300}"}`),
		call(f, "my agents", "GET", "/agents/me").bearer("token_a"),
	}
}

func sessionRequests() []request {
	const f = "sessions"
	open := func(name, bearer, body string) request {
		return call(f, name, "POST", "/rooms/{sroom}/agent-sessions").bearer(bearer).body(body)
	}
	return []request{
		call(f, "create the board room as A", "POST", "/projects").bearer("token_a").save("sroom", "id"),
		call(f, "register anonymously", "POST", "/rooms/{sroom}/agent-sessions").body(`{"actor_key":"compat-a/bot"}`),
		open("register, stale bearer", "stale", `{"actor_key":"compat-a/bot"}`),
		open("register without actor_key", "token_a", `{}`),
		open("register another account's agent", "token_a", `{"actor_key":"compat-b/bot"}`),
		open("register", "token_a", `{"actor_key":"compat-a/bot","display_name":"Bot","ide_label":"Codex"}`).
			save("sess_a", "session_id", "sess_a_token", "session_token", "sess_a_label", "actor_label"),
		open("register for B", "token_b", `{"actor_key":"compat-b/bot","display_name":"Bee"}`).
			save("sess_b", "session_id", "sess_b_token", "session_token", "sess_b_label", "actor_label"),
		open("register a controller", "token_a", `{"actor_key":"compat-a/bot","session_kind":"controller"}`).
			save("sess_c", "session_id", "sess_c_token", "session_token"),
		call(f, "presence", "GET", "/rooms/{sroom}/presence"),
		call(f, "post presence", "POST", "/rooms/{sroom}/presence").bearer("token_a").
			body(`{"status":"working","status_text":"compat run",` + sessionCreds + `}`),
		call(f, "post presence without credentials", "POST", "/rooms/{sroom}/presence").body(`{"status":"working"}`),
		call(f, "post presence, bad status", "POST", "/rooms/{sroom}/presence").bearer("token_a").
			body(`{"status":"dancing",` + sessionCreds + `}`),
		call(f, "presence after posting", "GET", "/rooms/{sroom}/presence"),
		call(f, "presence, limit=abc", "GET", "/rooms/{sroom}/presence?limit=abc"),
		call(f, "participants", "GET", "/rooms/{sroom}/participants"),
		call(f, "participants, limit=abc", "GET", "/rooms/{sroom}/participants?limit=abc"),
		call(f, "participants of an unknown room", "GET", "/rooms/"+noCode+"/participants"),
		call(f, "send as the worker", "POST", "/rooms/{sroom}/messages").bearer("token_a").
			body(`{"sender":"ignored","text":"from the worker",` + sessionCreds + `}`),
		call(f, "send with a wrong session token", "POST", "/rooms/{sroom}/messages").bearer("token_a").
			body(`{"sender":"x","text":"x","agent_session_id":"{sess_a}","agent_session_token":"{stale}"}`),
		call(f, "send with A's session, B's bearer", "POST", "/rooms/{sroom}/messages").bearer("token_b").
			body(`{"sender":"x","text":"x",` + sessionCreds + `}`),
		call(f, "read the board room", "GET", "/rooms/{sroom}/messages"),
		call(f, "poll with session headers", "GET", "/rooms/{sroom}/messages/poll?after=msg_1&timeout=1000").bearer("token_a").
			header("X-LetAgents-Agent-Session-Id", "{sess_a}").header("X-LetAgents-Agent-Session-Token", "{sess_a_token}"),
		call(f, "native activity", "POST", "/rooms/{sroom}/agent-sessions/{sess_a}/native-activity").bearer("token_a").
			body(`{"sequence":1,"method":"turn/started","status":"working","observed_at":"2020-01-01T00:00:00.000Z",` + sessionCreds + `}`),
	}
}

func taskRequests() []request {
	const f = "tasks"
	tasks := "/rooms/{sroom}/tasks"
	patch := func(name, task, body string) request {
		return call(f, name, "PATCH", tasks+"/"+task).body(body)
	}
	worker := func(fields string) string { return `{` + fields + `,` + sessionCreds + `}` }
	return []request{
		call(f, "add anonymously", "POST", tasks).body(`{"title":"First","created_by":"alice"}`),
		call(f, "add as the room admin's page", "POST", tasks).cookie("cookie_a").body(`{"title":"Second","created_by":"Compat A"}`),
		call(f, "add as the worker", "POST", tasks).bearer("token_a").body(worker(`"title":"Third","created_by":"x","description":"by the worker"`)),
		call(f, "add, stale bearer", "POST", tasks).bearer("stale").body(`{"title":"Fourth","created_by":"dave"}`),
		call(f, "add without title", "POST", tasks).body(`{"created_by":"alice"}`),
		call(f, "add without created_by", "POST", tasks).body(`{"title":"x"}`),
		call(f, "add malformed JSON", "POST", tasks).body(`{"title":`),
		call(f, "add to unknown room", "POST", "/rooms/"+noCode+"/tasks").body(`{"title":"x","created_by":"a"}`),
		call(f, "board", "GET", tasks),
		call(f, "board, open=true", "GET", tasks+"?open=true"),
		call(f, "board, status=proposed", "GET", tasks+"?status=proposed"),
		call(f, "board, status=bogus", "GET", tasks+"?status=bogus"),
		call(f, "board, limit=1", "GET", tasks+"?limit=1"),
		call(f, "board, limit=abc", "GET", tasks+"?limit=abc"),
		call(f, "board, after=task_1", "GET", tasks+"?after=task_1"),
		call(f, "board, after=garbage", "GET", tasks+"?after=garbage"),
		call(f, "board, stale bearer", "GET", tasks).bearer("stale"),
		call(f, "task", "GET", tasks+"/task_1"),
		call(f, "unknown task", "GET", tasks+"/task_999"),
		call(f, "malformed task id", "GET", tasks+"/garbage"),
		patch("accept anonymously", "task_1", `{"status":"accepted"}`),
		patch("accept as B", "task_1", `{"status":"accepted"}`).bearer("token_b"),
		patch("accept as the admin's page", "task_1", `{"status":"accepted"}`).cookie("cookie_a"),
		patch("accept the worker's task", "task_3", `{"status":"accepted"}`).cookie("cookie_a"),
		patch("set an unknown status", "task_1", `{"status":"bogus"}`).cookie("cookie_a"),
		patch("skip ahead to done", "task_3", `{"status":"done"}`).cookie("cookie_a"),
		patch("claim as the worker", "task_1", worker(`"status":"assigned","assignee":"{sess_a_label}","assignee_agent_key":"compat-a/bot"`)).bearer("token_a"),
		patch("start", "task_1", worker(`"status":"in_progress"`)).bearer("token_a"),
		patch("claim B's way while leased", "task_1", `{"status":"assigned","assignee":"{sess_b_label}","agent_session_id":"{sess_b}","agent_session_token":"{sess_b_token}"}`).bearer("token_b"),
		patch("submit for review", "task_1", worker(`"status":"in_review","pr_url":"https://github.com/compat/repo/pull/1"`)).bearer("token_a"),
		call(f, "claim a review", "POST", tasks+"/task_1/review-lease-action").bearer("token_b").
			body(`{"action":"claim","agent_session_id":"{sess_b}","agent_session_token":"{sess_b_token}"}`),
		patch("mark done as the admin's page", "task_1", `{"status":"done"}`).cookie("cookie_a"),
		patch("update unknown task", "task_999", `{"status":"accepted"}`).cookie("cookie_a"),
		patch("update with an empty body", "task_2", `{}`).cookie("cookie_a"),
		patch("accept the page's task", "task_2", `{"status":"accepted"}`).cookie("cookie_a"),
		patch("claim anonymously", "task_2", `{"status":"assigned","assignee":"alice"}`),
		call(f, "release a lease", "POST", tasks+"/task_3/lease-action").bearer("token_a").body(worker(`"action":"release"`)),
		call(f, "unknown lease action", "POST", tasks+"/task_3/lease-action").bearer("token_a").body(worker(`"action":"dance"`)),
		call(f, "board after the round", "GET", tasks),
		call(f, "task after the round", "GET", tasks+"/task_1"),
		call(f, "legacy board", "GET", "/projects/{sroom}/tasks"),
		call(f, "legacy add", "POST", "/projects/{sroom}/tasks").body(`{"title":"Legacy","created_by":"alice"}`),
		call(f, "legacy task", "GET", "/projects/{sroom}/tasks/task_1"),
		call(f, "legacy update", "PATCH", "/projects/{sroom}/tasks/task_2").cookie("cookie_a").body(`{"status":"cancelled"}`),
		call(f, "legacy unknown task", "GET", "/projects/{sroom}/tasks/task_999"),
	}
}

func boardRequests() []request {
	const f = "board"
	return []request{
		call(f, "board settings", "GET", "/rooms/{sroom}/board-settings"),
		call(f, "set board settings anonymously", "PATCH", "/rooms/{sroom}/board-settings").body(`{"mode":"open"}`),
		call(f, "set board settings as admin", "PATCH", "/rooms/{sroom}/board-settings").cookie("cookie_a").body(`{"mode":"open"}`),
		call(f, "intents", "GET", "/rooms/{sroom}/board-intents"),
		call(f, "register an intent", "POST", "/rooms/{sroom}/board-intents").bearer("token_a").
			body(`{"kind":"create_task","reason":"compat run",` + sessionCreds + `}`),
		call(f, "approve an unknown intent", "POST", "/rooms/{sroom}/board-intents/intent_999/approve").cookie("cookie_a"),
	}
}

func artifactRequests() []request {
	const f = "artifacts"
	arts := "/rooms/{sroom}/artifacts"
	return []request{
		call(f, "list", "GET", arts),
		call(f, "publish", "POST", arts).body(`{"artifact":{"provider":"github","kind":"pull_request","url":"https://github.com/compat/repo/pull/1","title":"PR"}}`),
		call(f, "publish flat, linked to a task", "POST", arts).body(`{"provider":"github","kind":"branch","ref":"compat","linked_task_ids":["task_1"]}`),
		call(f, "publish without identity", "POST", arts).body(`{"artifact":{"provider":"github","kind":"issue"}}`),
		call(f, "list for a task", "GET", arts+"?task_id=task_1"),
		call(f, "list, limit=abc", "GET", arts+"?limit=abc"),
	}
}

func streamRequests() []request {
	const f = "stream"
	return []request{
		call(f, "stream", "GET", "/rooms/{room}/messages/stream").stream(),
		call(f, "stream on the legacy path", "GET", "/projects/{room}/messages/stream").stream(),
		call(f, "stream of an unknown room", "GET", "/rooms/"+noCode+"/messages/stream").stream(),
		call(f, "stream of a repo room anonymously", "GET", "/rooms/"+repoRoom+"/messages/stream").stream(),
	}
}

func notFoundRequests() []request {
	const f = "notfound"
	return []request{
		call(f, "unknown path", "GET", "/nope"),
		call(f, "unknown path, POST", "POST", "/nope").body(`{}`),
		call(f, "unknown room subpath", "GET", "/rooms/{room}/nope"),
		call(f, "GET a room", "GET", "/rooms/{room}"),
		call(f, "rooms root", "GET", "/rooms"),
		call(f, "DELETE messages", "DELETE", "/rooms/{room}/messages"),
		call(f, "PUT /projects", "PUT", "/projects"),
		call(f, "POST to poll", "POST", "/rooms/{room}/messages/poll"),
		call(f, "CORS preflight", "OPTIONS", "/projects").header("Origin", "https://example.org").
			header("Access-Control-Request-Method", "POST"),
	}
}
