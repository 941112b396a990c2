// The room page: opening the room, following it live, and wiring its
// parts. Each part is a module: the messages (messages.js, one message in
// message.js), threads.js, search.js, the composers (compose.js), the
// side panel's agents.js, board.js and intents.js, export.js. What they
// show is decided in view.js, how live events change it in reducer.js,
// how the page follows the room in live.js; the state they share is the
// page's store (store.js).

import { ApiError, api, enc, errText, jsonPost, retryDelay } from "./api.js";
import { agentList } from "./agents.js";
import { accountNodes, signIn, signOut } from "./auth.js";
import { taskBoard } from "./board.js";
import { composers } from "./compose.js";
import { $, button, copyText, el, flash, store } from "./dom.js";
import { GITHUB_EVENT, MESSAGE_UPDATE } from "./events.js";
import { exportButton } from "./export.js";
import { githubEvents } from "./ghevents.js";
import { intentList } from "./intents.js";
import { eventStream, follow, longPoll, nap, untilBack } from "./live.js";
import { markReader } from "./message.js";
import { RENDER, messageList } from "./messages.js";
import { mentionsReader, readerKeys } from "./mentions.js";
import { PANEL_EVERY } from "./panel.js";
import { initPins } from "./pins.js";
import { reduce } from "./reducer.js";
import { renameForm } from "./rename.js";
import { roomSearch } from "./search.js";
import { soundToggle } from "./sound.js";
import { createStore, pageState } from "./store.js";
import { threadPanel } from "./threads.js";
import { chimes, isSystem, provenance as provenanceOf } from "./view.js";

const page = createStore(pageState("", ""));
const isStopped = () => page.get().stopped;

const statusEl = $("status");
function setStatus(text, cls) {
  if (statusEl.textContent !== text) statusEl.textContent = text;
  statusEl.className = "status" + (cls ? " " + cls : "");
}

function fatal(msg) {
  page.set({ stopped: true });
  setStatus("offline", "");
  $("title").textContent = "Can't open this room";
  $("layout").hidden = true;
  $("fatal").hidden = false;
  $("fatal-msg").textContent = msg;
}

// gate replaces the room with a notice when reading it is refused for
// want of a (suitable) sign-in, and stops all polling; it reports whether
// it did. Refused actions (a send, a board move) show where they happened.
function gate(err) {
  if (!(err instanceof ApiError)) return false;
  const noAuth = err.status === 401 && err.code === "NOT_AUTHENTICATED";
  const noAccess = err.status === 403 && err.code === "PRIVATE_REPO_NO_ACCESS";
  if (!noAuth && !noAccess) return false;
  if (page.get().stopped) return true;
  page.set({ stopped: true });
  setStatus(noAuth ? "sign-in required" : "no access", "");
  if (!page.get().opened) $("title").textContent = noAuth ? "Sign in to open this room" : "No access to this room";
  $("layout").hidden = true;
  $("gate-msg").textContent = err.message;
  $("gate-hint").hidden = !noAccess;
  const gateErr = $("gate-err");
  $("gate-action").replaceChildren(noAuth
    ? button("Sign in with GitHub", (b) => signIn(b, gateErr))
    : button("Sign out", (b) => signOut(b, gateErr)));
  $("gate").hidden = false;
  return true;
}

// ---- theme: the OS's unless chosen; the choice is kept -------------------
const THEMES = ["system", "light", "dark"];
function showTheme() {
  const t = document.documentElement.dataset.theme || "system";
  const b = $("theme");
  b.querySelector(".label").textContent = "Theme: " + t;
  // The spoken name starts with the words shown, as voice control users
  // say what they see.
  b.setAttribute("aria-label", `Theme: ${t}${t === "system" ? " (follows the system)" : ""}. Change theme`);
}
$("theme").addEventListener("click", () => {
  const cur = document.documentElement.dataset.theme || "system";
  const next = THEMES[(THEMES.indexOf(cur) + 1) % THEMES.length];
  if (next === "system") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = next;
  store.set("letagents.theme", next === "system" ? null : next);
  showTheme();
});
showTheme();

// ---- the parts of the page -------------------------------------------------
// provenance is what the server verified about a message's sender, with
// what the room's agent list knows of an agent.
const provenance = (m) => provenanceOf(m, page.get().agentsByLabel);

// mine tells the reader's own messages: under their account, or the
// name they post under.
const mine = (m) => !!m.sender && m.sender === compose.sender() && (!page.get().account || m.source === "browser");

// The GitHub events: a line drawn before its event was known is drawn
// again as the event's card once it is.
const github = githubEvents({ page, shown: (ids) => messages.redraw(ids) });
const messages = messageList({
  page, gate, provenance, mine, github,
  openThread: (root, opener) => threads.open(root, opener),
  pin: (id, b) => setPin(id, b),
  shown: (roots) => threads.shown(roots),
  fresh: (list) => sawMessages(list),
  reveal: () => {
    if (search.active()) search.end();
    if ($("layout").dataset.tab !== "chat") selectTab("chat");
  },
});
const threads = threadPanel({ page, provenance, loadUntil: messages.loadUntil });
const search = roomSearch({ page, gate, provenance, open: messages.jumpTo });
const compose = composers({ page, threadRoot: threads.root, sent: () => messages.toBottom(false) });
exportButton({ page, gate, provenance });
// The board redraws when the agents do: a handoff offers the workers
// connected now.
const agents = agentList({ page, drawn: () => board.draw() });
const board = taskBoard({ page, sender: compose.sender });
const intents = intentList({ page });
const sound = soundToggle();
const rename = renameForm({ page, renamed: (name) => showName(name) });

// setPin pins message id, or unpins it when pinned, for an admin (the
// Pin tool, which only admins see); a refusal shows in the chat's note.
async function setPin(id, b) {
  const pinned = !!b.closest(".pinned");
  b.disabled = true;
  try {
    const m = await api(`/rooms/${page.get().path}/messages/${id}/pin`, jsonPost(pinned ? "DELETE" : "POST", {}), 30000);
    if (pins) pins.update(m); // the stream's message_update says the same, later
  } catch (err) {
    flash($("chat-note"), `Could not ${pinned ? "unpin" : "pin"} ${id}: ${errText(err)}`);
  } finally {
    b.disabled = false;
  }
}

// Links to msg_N jump there, in place; so does the address's #msg_N.
document.addEventListener("click", (e) => {
  const a = e.target instanceof Element ? e.target.closest('a[href^="#msg_"]') : null;
  if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
  e.preventDefault();
  const id = a.getAttribute("href").slice(1);
  history.replaceState(null, "", "#" + id);
  if (threads.root() && narrow()) threads.close();
  messages.jumpTo(id);
});
window.addEventListener("hashchange", () => messages.jumpTo(location.hash.slice(1)));
document.addEventListener("keydown", (e) => {
  const t = e.target;
  const typing = t instanceof HTMLElement && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
  if (e.key === "/" && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) { e.preventDefault(); search.focus(); }
  if (e.key === "Escape" && threads.root() && !e.defaultPrevented) threads.close();
});

// Narrow, the header is one line; More opens the ids and the account.
$("more").addEventListener("click", () => {
  const open = $("header").classList.toggle("open");
  $("more").setAttribute("aria-expanded", String(open));
});

$("copy-id").addEventListener("click", async () => {
  const b = $("copy-id");
  try { await copyText(page.get().roomId); b.textContent = "Copied"; } catch { b.textContent = "Copy failed"; }
  setTimeout(() => { b.textContent = "Copy"; }, 1600);
});

// Narrow screens: tabs switch between the chat, the board and the agents.
const narrow = () => matchMedia("(max-width: 52rem)").matches;
const tabs = [...$("tabs").querySelectorAll("[data-tab]")];
function selectTab(name) {
  const layout = $("layout");
  const wasChat = layout.dataset.tab === "chat";
  layout.dataset.tab = name;
  for (const t of tabs) t.setAttribute("aria-selected", String(t.dataset.tab === name));
  if (name === "chat" && !wasChat && !messages.pillShown()) messages.toBottom(false);
}
for (const tab of tabs) tab.addEventListener("click", () => selectTab(tab.dataset.tab));

// ---- the side panel --------------------------------------------------------
function refreshPanel(now) {
  agents.refresh(now);
  board.refresh(now);
  intents.refresh(now);
}

// sawMessages follows new chat messages: they may ring the reader's
// sound (when on: others' while the tab is hidden, mentions of them);
// anyone may have joined or changed status; a line of the server's may
// mean the board moved.
function sawMessages(list) {
  const reader = readerKeys(page.get().account);
  if (chimes(list, { hidden: document.visibilityState !== "visible", mine, mentionsMe: (m) => mentionsReader(m.text, reader) })) sound.ring();
  agents.refresh();
  if (list.some(isSystem)) { board.refresh(); intents.refresh(); }
}

// startPanel loads the panel, and reloads its lists on the events that
// may change them (onEvent, sawMessages), when the tab is shown again,
// and when the connection is back after a gap (follow's onBack): never on
// a timer while the event stream brings the changes. What moves with time
// alone (a worker's connection lapsing, which no event says) shows at the
// next of those.
function startPanel() {
  page.set({ panelOn: true });
  refreshPanel(true);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") refreshPanel(true);
  });
}

// pollPanel reloads the panel every PANEL_EVERY while the page long-polls
// (how = "poll"), which brings messages alone: no task, reasoning or
// presence events. Following the stream again (how = "stream") stops it.
let panelTimer = 0;
function pollPanel(how) {
  const stop = () => { clearInterval(panelTimer); panelTimer = 0; };
  if (how !== "poll") { stop(); return; }
  if (panelTimer) return;
  panelTimer = setInterval(() => { if (isStopped()) stop(); else refreshPanel(); }, PANEL_EVERY);
}

// ---- live: the one place new messages and events arrive -------------------
// onEvent takes each live event, whatever carries it: the event stream
// (…/messages/stream) feeds it its events by name, each with its JSON
// data; the long-poll, where the server cannot stream, only "message"s.
// A worker's roster change (presence_update, presence_remove) changes
// the agents in place; other events that may change them (a message, a
// task, reasoning) reload them.
// What an event means is reduce's (reducer.js); this draws and reloads
// what it says.
let pins = null; // pinned messages (pins.js), once the history is loaded
function onEvent(type, data) {
  if (type === MESSAGE_UPDATE && pins) pins.update(data);
  if (type === GITHUB_EVENT) github.add(data); // before its line, which the same change sends next
  const r = reduce(page.get().live, type, data);
  page.set({ live: r.state });
  if (r.messages.length) messages.add(r.messages);
  if (r.draw.has("board")) board.draw();
  if (r.draw.has("agents")) agents.draw();
  if (r.draw.has("room")) showName(r.state.displayName);
  if (r.refresh.has("board")) board.refresh(true);
  if (r.refresh.has("agents")) agents.refresh();
}

// connect loads the history once, then follows the room through its
// event stream, or, where the server will not stream (it answers 501
// under Lambda, 503 when it holds its most streams, is stopping or its
// listener is not up yet, 404 before it had streams), through the
// long-poll (live.js). Each (re)connection tries the stream first and
// resumes after the last message shown. A refusal may pass (a server
// just started, a room's stream let go), so the long-poll gives the
// stream another try after streamRetry, which doubles with each refusal
// up to a minute and starts again once a stream opens. The messages come
// rendered (render=html), as every read of the page asks.
const STREAM_RETRY = 5000, STREAM_RETRY_MAX = 60000;
let streamRetry = STREAM_RETRY;
async function connect(up) {
  if (!page.get().historyLoaded) {
    await messages.loadHistory();
    pins = initPins(page.get().path, $("log"));
    up();
    messages.jumpTo(location.hash.slice(1));
  }
  const via = (how) => () => { $("status").dataset.via = how; pollPanel(how); up(); };
  const { path } = page.get();
  const lastId = () => "msg_" + page.get().lastNum;
  const streaming = via("stream");
  if (await eventStream(`/rooms/${path}/messages/stream?after=${lastId()}&heartbeat=event${RENDER}`,
    { isStopped, onEvent, onOpen: () => { streamRetry = STREAM_RETRY; streaming(); } })) return;
  const until = Date.now() + streamRetry;
  streamRetry = Math.min(streamRetry * 2, STREAM_RETRY_MAX);
  await longPoll((wait) => `/rooms/${path}/messages/poll?after=${lastId()}&timeout=${wait}&limit=200${RENDER}`,
    { isStopped, onEvent, onAnswer: via("poll"), until });
}

// ---- opening the room: a read, not a join ----------------------------------
// showRoom puts the id people know in the heading: the repository (and
// branch) of a Git Room, the invite code, or the room's name; the
// two-word codename goes beside the room id.
function showRoom(room) {
  if (typeof room.room_id === "string" && room.room_id) page.set({ roomId: room.room_id, path: enc(room.room_id) });
  const { roomId, admin } = page.set({ admin: room.role === "admin" });
  $("log").classList.toggle("can-pin", admin);
  rename.shown();
  const g = room.git_room && typeof room.git_room === "object" ? room.git_room : null;
  page.set({ repoHost: g && typeof g.host === "string" ? g.host : "" });
  const h1 = $("title");
  let title = room.code || room.name || roomId;
  if (g && g.repository) {
    title = `${g.repository.owner}/${g.repository.name}`;
    if (g.host && g.host !== "github.com") title = `${g.host}/${title}`;
    h1.replaceChildren(el("span", "", title));
    const branch = g.ref && g.ref.type === "branch" && g.ref.name ? String(g.ref.name) : "";
    h1.appendChild(el("span", "chip", branch ? "branch " + branch : "default branch"));
    if (branch) title += ` (${branch})`;
  } else {
    h1.textContent = title;
  }
  if (room.role === "admin") {
    const you = el("span", "badge admin", "admin");
    you.title = "You administer this room";
    h1.appendChild(you);
  }
  document.title = title + " · LetAgents";
  showName(room.display_name);
  $("room-id").textContent = roomId;
  if (room.code && room.code !== title) {
    $("room-code").textContent = room.code;
    $("code-wrap").hidden = false;
  }
  $("idline").hidden = false;
  intents.draw();
  board.draw(true);
}

// showName puts the room's display name (its codename, or the name an
// admin gave it) beside the room id, as the room opens and live as it is
// renamed.
function showName(name) {
  page.set({ displayName: typeof name === "string" ? name : "" });
  $("codename").textContent = name ? `“${name}” ·` : "";
}

// openRoom reads the room (GET …/info, which no rate counts, so reloads
// are free); only a room that does not exist yet is joined, which
// creates it where the server allows.
async function openRoom() {
  for (let backoff = 1000; ; backoff = Math.min(backoff * 2, 15000)) {
    const { path } = page.get();
    try {
      try {
        return await api(`/rooms/${path}/info`, {}, 30000);
      } catch (err) {
        if (!(err instanceof ApiError && err.status === 404)) throw err;
        return await api(`/rooms/${path}/join`, jsonPost("POST", {}), 30000);
      }
    } catch (err) {
      if (gate(err)) return null;
      if (err instanceof ApiError && err.status === 429) {
        const wait = retryDelay(err, backoff);
        setStatus(`${err.message} — retrying in ${Math.ceil(wait / 1000)}s…`, "retry");
        await nap(wait);
        continue;
      }
      if (err instanceof ApiError && err.status < 500) { fatal(err.message); return null; }
      setStatus("reconnecting…", "retry");
      await untilBack(backoff, isStopped);
    }
  }
}

// openAsMember joins, once a browser session, for a signed-in person
// who is not an admin yet: joining is what records them in the room
// and makes a repository's admin the room's. It never holds up the page.
async function openAsMember() {
  const { roomId, path, opened, admin, account } = page.get();
  const key = "letagents.joined:" + roomId;
  if (!opened || admin || !account) return;
  try { if (sessionStorage.getItem(key)) return; sessionStorage.setItem(key, "1"); } catch { /* join anyway */ }
  try {
    const room = await api(`/rooms/${path}/join`, jsonPost("POST", {}), 30000);
    if (room && room.role === "admin" && !page.get().admin) showRoom(room);
  } catch { /* the page works without it */ }
}

async function start() {
  const room = await openRoom();
  if (!room) return;
  if (typeof room !== "object") { fatal("Unexpected response from server."); return; }
  page.set({ opened: true });
  showRoom(room);
  $("layout").hidden = false;
  $("text").focus({ preventScroll: true });
  startPanel();
  openAsMember();
  follow(connect, { isStopped, gate, setStatus, onBack: () => refreshPanel(true) });
}

// main opens the room of the address.
function main() {
  let urlId = "";
  try {
    urlId = location.pathname.replace(/^\/in\/?/, "").split("/").filter(Boolean).map(decodeURIComponent).join("/");
  } catch {
    fatal("The room address is not valid.");
    return;
  }
  if (!urlId) { fatal("No room id in the address."); return; }
  page.set({ roomId: urlId, path: enc(urlId) });
  $("title").textContent = urlId;

  // The session: account null when signed out; unknown (null, configured
  // true) when the server did not answer. The local owner is everyone
  // here, no one's name: the page posts under the name typed, as where
  // nobody signs in.
  api("/auth/session", {}, 15000)
    .then((s) => ({ account: (s && s.authenticated && !s.local_owner && s.account) || null, configured: !!(s && s.sign_in_configured),
      local: !!(s && s.local_owner), known: true }))
    .catch(() => ({ account: null, configured: true, known: false }))
    .then((s) => {
      if (s.known) $("auth").replaceChildren(...accountNodes(s, { msgEl: $("auth-msg"), cls: "small", noSignIn: "No sign-in on this server: names are not verified." }));
      if (!s.account) return;
      page.set({ account: s.account });
      compose.signedIn();
      const reader = readerKeys(s.account);
      for (const li of document.querySelectorAll("#log li.msg, #thread-log li.msg")) markReader(li, reader);
      openAsMember();
    });
  start();
}
main();
