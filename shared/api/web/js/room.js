// The room page: the DOM glue. What it shows is decided in view.js, how
// live events change it in reducer.js, a composer's state in composer.js,
// how it follows the room (stream, long-poll, reconnecting) in live.js.

import * as composing from "./composer.js";
import { ApiError, api, enc, errText, jsonPost, retryDelay } from "./api.js";
import { button, copyText, el, flash, store } from "./dom.js";
import { eventStream, follow, longPoll, nap, untilBack } from "./live.js";
import { initialState, newer, older, reduce, upsertReasoning } from "./reducer.js";
import { MESSAGE_UPDATE } from "./events.js";
import { initPins } from "./pins.js";
import {
  boardGroups, fmtTime, httpUrl, intentByline, intentPayload, isSystem, lc, mentionsLine, moves,
  numOf, parseLabel, provenance as provenanceOf, reasoningLines, reasoningOf as latestReasoning, receiptsLine,
  replyCount as countReplies, rootOf,
} from "./view.js";

(() => {
  const $ = (id) => document.getElementById(id);
  const NAME_KEY = "letagents.name";
  const PAGE = 100;                 // messages per history page
  const RENDER = "&render=html";    // ask for the server's sanitised html of each message

  const statusEl = $("status");
  function setStatus(text, cls) {
    if (statusEl.textContent !== text) statusEl.textContent = text;
    statusEl.className = "status" + (cls ? " " + cls : "");
  }

  function fatal(msg) {
    stopped = true;
    setStatus("offline", "");
    $("title").textContent = "Can't open this room";
    $("layout").hidden = true;
    $("fatal").hidden = false;
    $("fatal-msg").textContent = msg;
  }

  // ---- theme: the OS's unless chosen; the choice is kept -----------------
  const THEMES = ["system", "light", "dark"];
  function showTheme() {
    const t = document.documentElement.dataset.theme || "system";
    const b = $("theme");
    b.textContent = "Theme: " + t;
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

  // ---- the room of the address ------------------------------------------
  let stopped = false;
  const isStopped = () => stopped;
  let urlId = "";
  try {
    urlId = location.pathname.replace(/^\/in\/?/, "").split("/").filter(Boolean).map(decodeURIComponent).join("/");
  } catch {
    fatal("The room address is not valid.");
    return;
  }
  if (!urlId) { fatal("No room id in the address."); return; }
  let P = enc(urlId); // room id as used in API paths
  let pins = null; // pinned messages (pins.js), once the history is loaded
  let roomId = urlId;
  $("title").textContent = urlId;

  // ---- sign-in -----------------------------------------------------------
  async function signIn(btn, msgEl) {
    btn.disabled = true;
    try {
      const r = await api("/auth/github/login", jsonPost("POST", { redirect_to: location.pathname + location.search }), 30000);
      const url = r && typeof r.auth_url === "string" ? new URL(r.auth_url, location.href) : null;
      if (url && /^https?:$/.test(url.protocol)) { location.href = url.href; return; }
      flash(msgEl, "Unexpected response from server.");
    } catch (err) { flash(msgEl, errText(err)); }
    btn.disabled = false;
  }

  async function signOut(btn, msgEl) {
    btn.disabled = true;
    try { await api("/auth/logout", jsonPost("POST", {}), 30000); location.reload(); return; }
    catch (err) { flash(msgEl, errText(err)); }
    btn.disabled = false;
  }

  // Avatars are shown only when same-origin: the CSP blocks other images.
  function sameOrigin(u) {
    try { return new URL(u, location.href).origin === location.origin; } catch { return false; }
  }

  // renderAuth shows the account, the way to sign in, or, where the server
  // has no sign-in, why nobody signs in, or that everyone is its local owner.
  function renderAuth(s) {
    const msgEl = $("auth-msg");
    const nodes = [];
    const acct = s.account;
    if (s.local) {
      // No one signs in or out: whoever uses this server is its owner.
      nodes.push(el("span", "", "Sign-in is off: everyone here acts as the local owner."));
    } else if (acct) {
      const login = String(acct.login || "");
      if (acct.avatar_url && sameOrigin(acct.avatar_url)) {
        const img = el("img");
        img.src = acct.avatar_url;
        img.alt = "";
        img.width = img.height = 20;
        nodes.push(img);
      }
      nodes.push(el("span", "", acct.display_name ? `${acct.display_name} (${login})` : login));
      nodes.push(button("Sign out", (b) => signOut(b, msgEl), "small"));
    } else if (s.configured) {
      nodes.push(button("Sign in with GitHub", (b) => signIn(b, msgEl), "small"));
    } else {
      nodes.push(el("span", "", "No sign-in on this server: names are not verified."));
    }
    $("auth").replaceChildren(...nodes);
  }

  // The session: account null when signed out; unknown (null, configured
  // true) when the server did not answer.
  const sessionP = api("/auth/session", {}, 15000)
    // The local owner is everyone here, no one's name: the page posts
    // under the name typed, as where nobody signs in.
    .then((s) => ({ account: (s && s.authenticated && !s.local_owner && s.account) || null, configured: !!(s && s.sign_in_configured),
      local: !!(s && s.local_owner), known: true }))
    .catch(() => ({ account: null, configured: true, known: false }));
  sessionP.then((s) => { if (s.known) renderAuth(s); });

  // gate replaces the room with a notice when reading it is refused for
  // want of a (suitable) sign-in, and stops all polling; it reports whether
  // it did. Refused actions (a send, a board move) show where they happened.
  let opened = false;
  function gate(err) {
    if (!(err instanceof ApiError)) return false;
    const noAuth = err.status === 401 && err.code === "NOT_AUTHENTICATED";
    const noAccess = err.status === 403 && err.code === "PRIVATE_REPO_NO_ACCESS";
    if (!noAuth && !noAccess) return false;
    if (stopped) return true;
    stopped = true;
    setStatus(noAuth ? "sign-in required" : "no access", "");
    if (!opened) $("title").textContent = noAuth ? "Sign in to open this room" : "No access to this room";
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

  // ---- who wrote a message ----------------------------------------------

  const agentsByLabel = new Map(); // lower-cased actor label → participant, as last loaded

  // provenance is what the server verified about a message's sender.
  const provenance = (m) => provenanceOf(m, agentsByLabel);

  // ---- message rendering -------------------------------------------------
  const scroller = $("scroller");
  const log = $("log");
  const pill = $("pill");
  const msgs = new Map();   // id → every message loaded
  let lastNum = 0;          // highest message number loaded
  let oldestNum = Infinity; // lowest message number loaded
  let hasOlder = false;     // whether messages before oldestNum exist
  let historyLoaded = false;
  let unseen = 0;
  let emptyNote = null;     // "No messages yet." until the first message
  const lastId = () => "msg_" + lastNum;

  const atBottom = () => scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 48;
  const toBottom = (smooth) => scroller.scrollTo({ top: scroller.scrollHeight, behavior: smooth ? "smooth" : "auto" });

  function idLink(id, cls) {
    const a = el("a", cls, id);
    a.href = "#" + id;
    return a;
  }

  // renderBody is the one place a message's body is drawn. The server's
  // html (its Markdown, rendered and sanitised by the server) is used when
  // it sends one; otherwise the text, escaped, with msg_N ids as links.
  function renderBody(m, text) {
    const body = el("div", "text");
    if (typeof m.html === "string" && !isSystem(m)) {
      body.classList.add("md"); // sanitised by the server (shared/markdown)
      body.innerHTML = m.html;
      return body;
    }
    const parts = text.split(/\b(msg_\d+)\b/);
    for (let i = 0; i < parts.length; i++) {
      if (i % 2) body.appendChild(idLink(parts[i]));
      else if (parts[i]) body.appendChild(document.createTextNode(parts[i]));
    }
    return body;
  }

  function showReplyCount(root) {
    const li = document.getElementById(root);
    const b = li && li.querySelector(".replies");
    if (!b) return;
    const n = countReplies(msgs, root);
    b.hidden = !n;
    b.textContent = `${n} repl${n === 1 ? "y" : "ies"}`;
    b.setAttribute("aria-label", `${n} repl${n === 1 ? "y" : "ies"} to ${root}: open the thread`);
  }

  // renderMessage draws m for the room's list, or for the thread panel
  // (inThread: no element id, no thread buttons).
  function renderMessage(m, inThread) {
    const li = el("li", "msg");
    if (!inThread) { li.id = m.id; li.tabIndex = -1; }
    li.dataset.id = m.id;
    if (pins) pins.mark(li, m);
    const prov = provenance(m);
    let text = typeof m.text === "string" ? m.text : "";
    if (prov.kind === "system") {
      li.classList.add("status-line");
      if (text.startsWith("[status] ")) text = text.slice(9);
    }
    const meta = el("div", "meta");
    const who = el("span", "sender", prov.name || "unknown");
    who.title = m.sender || "";
    const badge = el("span", "badge " + prov.kind, prov.kind);
    badge.title = prov.title;
    meta.append(who, badge);
    if (prov.detail) meta.appendChild(el("span", "", prov.detail));
    const t = el("time", "", fmtTime(m.timestamp));
    if (m.timestamp) { t.dateTime = m.timestamp; t.title = m.timestamp; }
    meta.append(t, idLink(m.id, "mid mono"));
    li.appendChild(meta);
    if (m.thread_parent_id) {
      const q = el("div", "quote", "↳ reply to ");
      q.appendChild(idLink(String(m.thread_parent_id), "mono"));
      const r = m.reply_to;
      if (r && typeof r === "object" && typeof r.text === "string") {
        const excerpt = r.text.length > 120 ? r.text.slice(0, 120) + "…" : r.text;
        q.append(` ${parseLabel(r.sender).display || r.sender}: `, el("span", "", excerpt));
      }
      li.appendChild(q);
    }
    li.appendChild(renderBody(m, text));
    const ment = mentionsLine(m);
    if (ment) li.appendChild(el("div", "quote mentions", ment));
    const receipts = receiptsLine(m);
    if (receipts) li.appendChild(el("div", "quote receipts", receipts));
    if (!inThread) {
      const root = rootOf(m);
      const acts = el("div", "acts");
      const reply = button("Reply", () => openThread(root, reply), "link");
      reply.setAttribute("aria-label", `Reply in the thread of ${root}`);
      acts.appendChild(reply);
      if (root === m.id) {
        const replies = button("", () => openThread(root, replies), "link replies");
        replies.hidden = true;
        acts.appendChild(replies);
      }
      // A status line keeps to one line: its buttons go in its meta line.
      (prov.kind === "system" ? meta : li).appendChild(acts);
    }
    return li;
  }

  function sawThreads(list) {
    const roots = new Set(list.map(rootOf));
    for (const root of roots) showReplyCount(root);
    if (threadRoot && roots.has(threadRoot)) renderThread();
  }

  function renderInto(list) {
    const frag = document.createDocumentFragment();
    for (const m of list) frag.appendChild(renderMessage(m, false));
    return frag;
  }

  // addMessages appends the messages newer than any shown, in id order.
  // Returns how many were added.
  function addMessages(list, initial) {
    const fresh = newer(list, lastNum, msgs);
    if (!fresh.length) return 0;
    for (const m of fresh) msgs.set(m.id, m);
    const stick = initial || atBottom();
    lastNum = numOf(fresh[fresh.length - 1].id);
    oldestNum = Math.min(oldestNum, numOf(fresh[0].id));
    if (emptyNote) { emptyNote.remove(); emptyNote = null; }
    log.appendChild(renderInto(fresh));
    sawThreads(fresh);
    if (!initial) panelSawMessages(fresh);
    if (stick) {
      toBottom(false);
    } else {
      unseen += fresh.length;
      pill.textContent = `${unseen} new message${unseen === 1 ? "" : "s"} ↓`;
      pill.hidden = false;
    }
    return fresh.length;
  }

  // prependMessages puts older messages above the ones shown, keeping what
  // the reader looks at where it is.
  function prependMessages(list) {
    const earlier = older(list, oldestNum, msgs);
    if (!earlier.length) return 0;
    for (const m of earlier) msgs.set(m.id, m);
    oldestNum = numOf(earlier[0].id);
    const fromBottom = scroller.scrollHeight - scroller.scrollTop;
    log.prepend(renderInto(earlier));
    scroller.scrollTop = scroller.scrollHeight - fromBottom;
    sawThreads(earlier);
    return earlier.length;
  }

  scroller.addEventListener("scroll", () => {
    if (!pill.hidden && atBottom()) { pill.hidden = true; unseen = 0; }
    if (scroller.scrollTop < 300) loadOlder();
  }, { passive: true });
  pill.addEventListener("click", () => {
    toBottom(true);
    pill.hidden = true;
    unseen = 0;
    $("text").focus({ preventScroll: true });
  });

  // ---- history: the latest page, then older pages on the way up ----------
  function showOlder(note) {
    $("older-btn").hidden = !hasOlder || !!olderBusy;
    $("older-note").textContent = note != null ? note : olderBusy ? "Loading earlier messages…" : hasOlder || !historyLoaded || !msgs.size ? "" : "The start of the room.";
  }

  async function loadHistory() {
    const body = await api(`/rooms/${P}/messages?before=latest&limit=${PAGE}${RENDER}`, {}, 30000);
    hasOlder = !!(body && (body.has_older ?? body.has_more));
    const list = (body && body.messages) || [];
    if (!list.length && !hasOlder) {
      emptyNote = el("li", "note", "No messages yet.");
      log.appendChild(emptyNote);
    }
    addMessages(list, true);
    historyLoaded = true;
    log.setAttribute("aria-busy", "false");
    showOlder();
  }

  // loadOlder reads the page before the oldest message shown; one at a
  // time. It answers whether it worked.
  let olderBusy = null;
  function loadOlder() {
    if (olderBusy) return olderBusy;
    if (!historyLoaded || !hasOlder || stopped) return Promise.resolve(!hasOlder);
    olderBusy = (async () => {
      showOlder();
      log.setAttribute("aria-busy", "true");
      try {
        const body = await api(`/rooms/${P}/messages?before=msg_${oldestNum}&limit=${PAGE}${RENDER}`, {}, 30000);
        hasOlder = !!(body && (body.has_older ?? body.has_more));
        prependMessages((body && body.messages) || []);
        return true;
      } catch (err) {
        if (gate(err)) return false;
        olderBusy = null;
        showOlder("Could not load earlier messages: " + errText(err));
        return false;
      } finally {
        log.setAttribute("aria-busy", "false");
        if (olderBusy) { olderBusy = null; showOlder(); }
      }
    })();
    return olderBusy;
  }
  $("older-btn").addEventListener("click", () => loadOlder());

  // loadUntil loads older pages until message n is loaded (or none is
  // older); it answers whether n is loaded or cannot exist.
  async function loadUntil(n) {
    while (oldestNum > n && hasOlder) {
      if (!(await loadOlder())) return false;
    }
    return true;
  }

  // ---- links to msg_N: jump there, loading it first when needed ----------
  const chatNote = $("chat-note");
  async function jumpTo(id) {
    const n = numOf(id);
    if (!Number.isFinite(n) || !historyLoaded) return;
    if (n < 1 || n > lastNum) { flash(chatNote, `${id} is not in this room.`); return; }
    if (n < oldestNum) {
      chatNote.textContent = `Loading up to ${id}…`;
      const ok = await loadUntil(n);
      chatNote.textContent = "";
      if (!ok) { flash(chatNote, `Could not load ${id}.`); return; }
    }
    const li = document.getElementById(id);
    if (!li || !log.contains(li)) { flash(chatNote, `${id} is not in this room.`); return; }
    if (searching()) endSearch();
    if (li.classList.contains("status-line") && !$("show-status").checked) { $("show-status").checked = true; applyStatusFilter(); }
    if (layout.dataset.tab !== "chat") selectTab("chat");
    li.scrollIntoView({ block: "center" });
    li.focus({ preventScroll: true });
    li.classList.add("flash");
    setTimeout(() => li.classList.remove("flash"), 2500);
  }

  document.addEventListener("click", (e) => {
    const a = e.target instanceof Element ? e.target.closest('a[href^="#msg_"]') : null;
    if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    const id = a.getAttribute("href").slice(1);
    history.replaceState(null, "", "#" + id);
    if (threadRoot && narrow()) closeThread();
    jumpTo(id);
  });
  window.addEventListener("hashchange", () => jumpTo(location.hash.slice(1)));

  // ---- filters: status lines, search -------------------------------------
  const STATUS_KEY = "letagents.status-lines";
  $("show-status").checked = store.get(STATUS_KEY) !== "hidden";
  function applyStatusFilter() {
    const show = $("show-status").checked;
    log.classList.toggle("hide-status", !show);
    store.set(STATUS_KEY, show ? null : "hidden");
  }
  $("show-status").addEventListener("change", applyStatusFilter);
  applyStatusFilter();

  // Search asks the server (GET …/search): ranked hits over the whole
  // room, each with a snippet whose matched words come marked. While it
  // shows them, the results take the messages' place; a result opens its
  // message in the chat, and Escape or an empty box goes back there.
  const searchIn = $("search");
  const chatEl = $("chat");
  const resultsList = $("results-list");
  const moreBtn = $("results-more");
  const searching = () => chatEl.classList.contains("searching");
  let searchSeq = 0;   // the latest search asked; older answers are dropped
  let searchQ = "";    // the query the results shown are for
  let nextCursor = "";

  // snippetOf draws a hit's snippet: plain-text parts, the matches in
  // <mark>; text only, never markup.
  function snippetOf(hit) {
    const body = el("span", "text");
    const parts = Array.isArray(hit.snippet) ? hit.snippet : [];
    for (const p of parts) {
      if (!p || typeof p.text !== "string") continue;
      body.appendChild(p.match ? el("mark", "", p.text) : document.createTextNode(p.text));
    }
    if (!body.childNodes.length) body.textContent = typeof hit.message.text === "string" ? hit.message.text.slice(0, 200) : "";
    return body;
  }

  function renderResult(hit) {
    const m = hit.message;
    const prov = provenance(m);
    const b = el("button");
    b.type = "button";
    b.dataset.id = m.id;
    const meta = el("span", "meta");
    meta.append(el("span", "sender", prov.name || "unknown"), el("span", "badge " + prov.kind, prov.kind), el("span", "", fmtTime(m.timestamp)), el("span", "mid mono", m.id));
    b.append(meta, snippetOf(hit));
    const ment = mentionsLine(m);
    if (ment) b.appendChild(el("span", "quote mentions", ment));
    b.addEventListener("click", () => {
      endSearch();
      history.replaceState(null, "", "#" + m.id);
      jumpTo(m.id);
    });
    const li = el("li");
    li.appendChild(b);
    return li;
  }

  async function runSearch(q, cursor) {
    const seq = ++searchSeq;
    chatEl.classList.add("searching");
    resultsList.setAttribute("aria-busy", "true");
    moreBtn.disabled = true;
    try {
      const body = await api(`/rooms/${P}/search?q=${encodeURIComponent(q)}&limit=20` + (cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""), {}, 30000);
      if (seq !== searchSeq) return;
      const hits = ((body && body.results) || []).filter((h) => h && h.message && Number.isFinite(numOf(h.message.id)));
      if (!cursor) resultsList.replaceChildren();
      for (const h of hits) resultsList.appendChild(renderResult(h));
      searchQ = q;
      nextCursor = body && body.has_more && typeof body.next_cursor === "string" ? body.next_cursor : "";
      moreBtn.hidden = !nextCursor;
      const n = resultsList.children.length;
      chatNote.textContent = n ? `${n}${nextCursor ? "+" : ""} result${n === 1 ? "" : "s"} for “${q}”, best first.` : `No message matches “${q}”.`;
    } catch (err) {
      if (seq !== searchSeq || gate(err)) return;
      if (!cursor) { resultsList.replaceChildren(); moreBtn.hidden = true; }
      chatNote.textContent = "Search: " + errText(err);
    } finally {
      if (seq === searchSeq) { resultsList.setAttribute("aria-busy", "false"); moreBtn.disabled = false; }
    }
  }

  // endSearch goes back to the chat, leaving the box as it is.
  function endSearch() {
    searchSeq++;
    clearTimeout(searchTimer);
    chatEl.classList.remove("searching");
    resultsList.replaceChildren();
    moreBtn.hidden = true;
    searchQ = nextCursor = "";
    chatNote.textContent = "";
  }

  // A pause in typing searches, as does Enter at once.
  let searchTimer = 0;
  const searchNow = () => {
    clearTimeout(searchTimer);
    const q = searchIn.value.trim();
    if (!q) { if (searching()) endSearch(); return; }
    if (q !== searchQ || !searching()) runSearch(q, "");
  };
  searchIn.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(searchNow, 300);
  });
  searchIn.addEventListener("keydown", (e) => {
    // Down goes from the box to the first result, for keyboards.
    if (e.key === "ArrowDown" && searching() && resultsList.querySelector("button")) {
      e.preventDefault();
      resultsList.querySelector("button").focus();
      return;
    }
    if (e.key !== "Escape") return;
    e.preventDefault();
    searchIn.value = "";
    endSearch();
    searchIn.blur();
  });
  $("search-form").addEventListener("submit", (e) => { e.preventDefault(); searchNow(); });
  moreBtn.addEventListener("click", () => { if (nextCursor) runSearch(searchQ, nextCursor); });
  document.addEventListener("keydown", (e) => {
    const t = e.target;
    const typing = t instanceof HTMLElement && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
    if (e.key === "/" && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) { e.preventDefault(); searchIn.focus(); }
    if (e.key === "Escape" && threadRoot && !e.defaultPrevented) closeThread();
  });

  // ---- live: the one place new messages and events arrive ----------------
  // onEvent takes each live event, whatever carries it: the event stream
  // (…/messages/stream) feeds it its events by name, each with its JSON
  // data; the long-poll, where the server cannot stream, only "message"s.
  // Presence has no event of its own: whatever may change it (a message,
  // a task, reasoning) reloads the agents.
  // What an event means is reduce's (reducer.js); this draws and reloads
  // what it says.
  function onEvent(type, data) {
    if (type === MESSAGE_UPDATE && pins) pins.update(data);
    const r = reduce(state, type, data);
    state = r.state;
    if (r.messages.length) addMessages(r.messages);
    if (r.draw.has("board") && changed("board", state.board)) renderBoard();
    if (r.draw.has("agents")) renderAgents();
    if (r.refresh.has("board")) refreshBoard(true);
    if (r.refresh.has("agents")) refreshAgents();
  }

  // connect loads the history once, then follows the room through its
  // event stream, or, where the server will not stream (it answers 501
  // under Lambda, 503 when it holds its most streams or is stopping, 404
  // before it had streams), through the long-poll (live.js). Each
  // (re)connection tries the stream first and resumes after the last
  // message shown. The messages come rendered (render=html), as every
  // read of the page asks.
  async function connect(up) {
    if (!historyLoaded) {
      await loadHistory();
      pins = initPins(P, $("log"));
      up();
      jumpTo(location.hash.slice(1));
    }
    const via = (how) => () => { $("status").dataset.via = how; up(); };
    if (await eventStream(`/rooms/${P}/messages/stream?after=${lastId()}&heartbeat=event${RENDER}`,
      { isStopped, onEvent, onOpen: via("stream") })) return;
    await longPoll((wait) => `/rooms/${P}/messages/poll?after=${lastId()}&timeout=${wait}&limit=200${RENDER}`,
      { isStopped, onEvent, onAnswer: via("poll") });
  }

  // ---- posting -----------------------------------------------------------
  // Both composers (the room's, the thread's) have the name field of
  // anonymous posting; they show one name, kept in this browser.
  const nameInputs = [$("name"), $("thread-name")];
  const textInput = $("text");
  let account = null; // the signed-in account, who posts as themselves
  for (const input of nameInputs) {
    input.value = store.get(NAME_KEY) || "";
    input.placeholder = "your name";
    input.addEventListener("input", () => {
      for (const other of nameInputs) if (other !== input) other.value = input.value;
      store.set(NAME_KEY, input.value.trim() || null);
    });
  }

  // sender is the name posts and tasks go under: the account's when
  // signed in, else the one typed (and kept).
  const sender = () => account ? String(account.display_name || account.login || "") : nameInputs[0].value.trim();

  sessionP.then((s) => {
    if (!s.account) return;
    account = s.account;
    const login = String(account.login || "");
    for (const form of [$("composer"), $("thread-composer")]) {
      const as = form.querySelector(".as");
      as.textContent = `Posting as ${sender()}${account.display_name && login ? ` (${login})` : ""}, signed in with GitHub`;
      as.hidden = false;
      form.querySelector(".name").hidden = true;
      form.classList.add("signed-in");
    }
    openAsMember();
  });

  const newClientId = () => (crypto.randomUUID ? crypto.randomUUID() : Date.now().toString(36) + Math.random().toString(36).slice(2));

  function autosize(ta) {
    ta.style.height = "auto";
    ta.style.height = Math.min(ta.scrollHeight + 2, 192) + "px";
  }

  // composer wires a message form: Enter sends, Shift+Enter breaks the
  // line, and a failed send keeps the text and its client_message_id, so
  // that trying again cannot post it twice.
  function composer(form, ta, btn, errEl, parent) {
    let c = composing.composerState();
    ta.addEventListener("input", () => { autosize(ta); c = composing.edited(c); if (errEl.textContent) errEl.textContent = ""; });
    ta.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
        e.preventDefault();
        form.requestSubmit();
      }
    });
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const to = parent();
      const step = composing.submit(c, { text: ta.value, sender: sender(), parent: to, newId: newClientId });
      c = step.state;
      if (step.action === "focus-text") { ta.focus(); return; }
      if (step.action === "need-name") { errEl.textContent = step.error; form.querySelector(".name input").focus(); return; }
      if (step.action !== "send") return;
      btn.disabled = true;
      errEl.textContent = "";
      try {
        await api(`/rooms/${P}/messages`, jsonPost("POST", step.body), 30000);
        // The live transport brings the message, in order, to onEvent.
        c = composing.sent(c);
        ta.value = "";
        autosize(ta);
        if (!to) toBottom(false);
      } catch (err) {
        const f = composing.failed(c, err instanceof ApiError ? err.message : "");
        c = f.state;
        errEl.textContent = f.error;
      } finally {
        btn.disabled = false;
        ta.focus();
      }
    });
  }
  composer($("composer"), textInput, $("send"), $("send-error"), () => "");

  $("copy-id").addEventListener("click", async () => {
    const b = $("copy-id");
    try { await copyText(roomId); b.textContent = "Copied"; } catch { b.textContent = "Copy failed"; }
    setTimeout(() => { b.textContent = "Copy"; }, 1600);
  });

  // ---- threads -----------------------------------------------------------
  const layout = $("layout");
  const threadLog = $("thread-log");
  let threadRoot = "";
  let threadOpener = null;
  const narrow = () => matchMedia("(max-width: 52rem)").matches;

  function renderThread() {
    const root = msgs.get(threadRoot);
    const replies = [...msgs.values()].filter((m) => rootOf(m) === threadRoot && m.id !== threadRoot).sort((a, b) => numOf(a.id) - numOf(b.id));
    const items = [];
    if (root) items.push(renderMessage(root, true));
    else items.push(el("li", "note", hasOlder ? "Loading the thread…" : `${threadRoot} is not in this room.`));
    items.push(...replies.map((m) => renderMessage(m, true)));
    if (root && !replies.length) items.push(el("li", "note", "No replies yet."));
    const stick = threadLog.scrollHeight - threadLog.scrollTop - threadLog.clientHeight < 48;
    threadLog.replaceChildren(...items);
    if (stick) threadLog.scrollTop = threadLog.scrollHeight;
  }

  // openThread shows the thread of root, loading history back to it: every
  // reply is newer than its root, so then the whole thread is loaded.
  async function openThread(root, opener) {
    threadRoot = root;
    threadOpener = opener || null;
    $("thread-h").textContent = `Thread of ${root}`;
    $("thread").hidden = false;
    layout.classList.add("threading");
    renderThread();
    $("thread-text").focus();
    if (!msgs.has(root)) {
      await loadUntil(numOf(root));
      if (threadRoot === root) renderThread();
    }
  }

  function closeThread() {
    threadRoot = "";
    $("thread").hidden = true;
    layout.classList.remove("threading");
    if (threadOpener && threadOpener.isConnected) threadOpener.focus();
    threadOpener = null;
  }
  $("thread-close").addEventListener("click", closeThread);
  composer($("thread-composer"), $("thread-text"), $("thread-send"), $("thread-error"), () => threadRoot);

  // ---- export: the whole room as Markdown --------------------------------
  $("export").addEventListener("click", async (e) => {
    const b = e.currentTarget;
    b.disabled = true;
    const lines = [`# ${document.title.replace(/ · LetAgents$/, "")}`, "", `Room \`${roomId}\`, exported ${new Date().toISOString()}.`, ""];
    let after = 0, count = 0;
    try {
      for (;;) {
        const body = await api(`/rooms/${P}/messages?after=msg_${after}&limit=500`, {}, 60000);
        const list = (body && Array.isArray(body.messages)) ? body.messages : [];
        for (const m of list) {
          const prov = provenance(m);
          const what = [prov.kind, prov.detail].filter(Boolean).join(", ");
          lines.push(`### ${m.sender} (${what}) · ${m.timestamp} · ${m.id}`, "");
          if (m.thread_parent_id) lines.push(`> reply to ${m.thread_parent_id}`, "");
          lines.push(String(m.text || ""), "");
          after = Math.max(after, numOf(m.id));
        }
        count += list.length;
        b.textContent = `Exporting… ${count}`;
        if (!body || !body.has_more || !list.length) break;
      }
      const blob = new Blob([lines.join("\n")], { type: "text/markdown;charset=utf-8" });
      const a = el("a");
      a.href = URL.createObjectURL(blob);
      a.download = `${roomId.replace(/[^A-Za-z0-9._-]+/g, "_")}-${new Date().toISOString().slice(0, 10)}.md`;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10000);
      flash(chatNote, `Exported ${count} message${count === 1 ? "" : "s"}.`);
    } catch (err) {
      if (!gate(err)) flash(chatNote, "Export failed: " + errText(err));
    }
    b.textContent = "Export .md";
    b.disabled = false;
  });

  // ---- side panel: agents, board, pending intents ------------------------
  // The panel is extra: its failures show inline and never touch the chat.
  const PANEL_EVERY = 15000; // the fallback refresh; also the wait after a failure
  const PANEL_GAP = 500;     // least wait between refreshes after a success: events show within a second
  let isAdmin = false;
  let panelOn = false;
  // state is what live events change (reducer.js): the board ({tasks,
  // all, more} as last loaded and updated since) and the open reasoning
  // sessions.
  let state = initialState();
  let intents = [];              // pending intents as last loaded
  let agents = { list: [], hidden: 0 };
  const taskErrs = new Map();    // task id → the server's answer to the last move
  const intentErrs = new Map();  // intent id → the server's answer to the last decision
  const seen = {};               // what each list last rendered, to skip no-op renders

  // refresher wraps a panel load (which answers whether it worked): one
  // run at a time, requests in between fold into one, and runs keep
  // PANEL_GAP apart (PANEL_EVERY after a failure) unless asked for now.
  // Nothing runs while the page is hidden.
  function refresher(load) {
    let timer = 0, busy = false, again = false, next = 0;
    async function go() {
      timer = 0;
      if (stopped || !panelOn || document.visibilityState !== "visible") return;
      if (busy) { again = true; return; }
      busy = true;
      let ok = false;
      try { ok = await load(); } catch { ok = false; }
      busy = false;
      next = Date.now() + (ok ? PANEL_GAP : PANEL_EVERY);
      if (again) { again = false; request(); }
    }
    function request(now) {
      if (stopped || (timer && !now)) return;
      clearTimeout(timer);
      timer = setTimeout(go, now ? 0 : Math.max(0, next - Date.now()));
    }
    return request;
  }

  // changed reports whether data differs from what list last rendered.
  function changed(list, data) {
    const key = JSON.stringify(data);
    if (seen[list] === key) return false;
    seen[list] = key;
    return true;
  }

  // -- agents and their reasoning
  async function loadAgents() {
    let body;
    try { body = await api(`/rooms/${P}/participants`, {}, 20000); }
    catch (err) { $("agents-err").textContent = "Could not load agents: " + errText(err); return false; }
    $("agents-err").textContent = "";
    agents = { list: Array.isArray(body && body.participants) ? body.participants : [], hidden: Number(body && body.hidden_count) || 0 };
    agentsByLabel.clear();
    for (const p of agents.list) if (p && p.actor_label) agentsByLabel.set(lc(p.actor_label), p);
    renderAgents();
    return true;
  }

  // Reasoning cards: the agents' open reasoning sessions, while the server
  // has the API (a 404 hides the cards for the life of the page).
  let reasoningOn = true;
  async function loadReasoning() {
    if (!reasoningOn) return true;
    let body;
    try { body = await api(`/rooms/${P}/reasoning-sessions?open=true`, {}, 20000); }
    catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) return false;
      reasoningOn = false;
      state = { ...state, reasoning: new Map() };
      renderAgents();
      return true;
    }
    let sessions = new Map();
    for (const s of Array.isArray(body && body.sessions) ? body.sessions : []) sessions = upsertReasoning(sessions, s);
    state = { ...state, reasoning: sessions };
    renderAgents();
    return true;
  }

  function renderCard(slot, s) {
    slot.hidden = !s;
    if (!s) return;
    const { head, fields } = reasoningLines(s);
    slot.replaceChildren(el("strong", "", head.title), el("span", "", head.summary), ...fields.map((f) => el("div", "sub", f)));
  }

  function renderAgents() {
    const { list, hidden } = agents;
    if (!changed("agents", [list, hidden, reasoningOn && [...state.reasoning.values()]])) return;
    $("agents-count").textContent = `(${list.length})`;
    const items = list.map((p) => {
      const li = el("li");
      const head = el("div");
      if (p.kind === "human") {
        head.append(el("strong", "", p.display_name || "someone"), " ", el("span", "sub", "person"));
        li.appendChild(head);
        return li;
      }
      // An agent: the dot says whether messages reach it now.
      const dot = el("span", "dot" + (p.connected ? " on" : ""));
      dot.setAttribute("role", "img");
      dot.setAttribute("aria-label", p.connected ? "connected" : "not connected");
      dot.title = p.connected ? "connected" : "not connected";
      head.append(dot, el("strong", "", p.display_name || parseLabel(p.actor_label).display || "agent"));
      li.appendChild(head);
      const who = [p.owner_label && `${p.owner_label}'s agent`, p.ide_label].filter(Boolean).join(" · ");
      if (who) li.appendChild(el("div", "sub", who));
      const status = [p.status, p.status_text].filter(Boolean).join(" — ");
      if (status) li.appendChild(el("div", "sub", status));
      const slot = el("div", "think");
      slot.setAttribute("aria-label", "Reasoning");
      renderCard(slot, reasoningOn ? latestReasoning(state.reasoning.values(), p) : null);
      li.appendChild(slot);
      return li;
    });
    if (!items.length) items.push(el("li", "note", "Nobody has posted in this room yet."));
    if (hidden) items.push(el("li", "note", `${hidden} more not shown.`));
    $("agents").replaceChildren(...items);
  }

  // -- board
  async function loadMode() {
    let mode = "";
    try {
      const s = await api(`/rooms/${P}/board-settings`, {}, 20000);
      if (s && typeof s.manager_mode === "string") mode = s.manager_mode;
    } catch { /* optional: the board works without it */ }
    $("board-mode").textContent = mode && mode !== "off" ? "Manager mode: " + mode.replace("_", " ") : "";
    $("board-mode").hidden = !mode || mode === "off";
  }

  async function loadBoard() {
    const all = $("show-closed").checked;
    const events = state.taskEvents; // to spot task events a load may predate
    let body;
    try {
      [body] = await Promise.all([api(`/rooms/${P}/tasks?${all ? "" : "open=true&"}limit=500`, {}, 20000), loadMode()]);
    } catch (err) { $("board-err").textContent = "Could not load the board: " + errText(err); return false; }
    $("board-err").textContent = "";
    // A task changed while this load was under way: its answer may hold
    // the task as it was, so it is read again rather than shown.
    if (events !== state.taskEvents) { refreshBoard(); return true; }
    state = { ...state, board: { tasks: Array.isArray(body && body.tasks) ? body.tasks : [], all, more: !!(body && body.has_more) } };
    if (changed("board", state.board)) renderBoard();
    return true;
  }

  function renderTask(t) {
    const li = el("li");
    const head = el("div");
    head.append(el("span", "mono", t.id), " ", el("span", "", t.title || ""));
    li.appendChild(head);
    const sub = el("div", "sub", [t.assignee || "unassigned", t.created_by && `by ${t.created_by}`].filter(Boolean).join(" · "));
    const pr = httpUrl(t.pr_url);
    if (pr) {
      const a = el("a", "", "PR ↗");
      a.href = pr;
      a.title = pr;
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      sub.append(" · ", a);
    }
    li.appendChild(sub);
    const row = el("div", "actions");
    for (const [label, to] of moves(t.status, isAdmin)) {
      const b = button(label, (btn) => moveTask(t.id, to, btn), "small");
      b.setAttribute("aria-label", `${label} ${t.id}`);
      row.appendChild(b);
    }
    if (row.childElementCount) li.appendChild(row);
    if (taskErrs.has(t.id)) li.appendChild(el("p", "panel-err", taskErrs.get(t.id)));
    return li;
  }

  function renderBoard() {
    if (!state.board) return;
    const { tasks, all, more } = state.board;
    const nodes = [];
    for (const group of boardGroups(state.board)) {
      const h = el("h3", "", group.label + " ");
      h.appendChild(el("span", "count", `(${group.tasks.length})`));
      const ul = el("ul", "plist");
      ul.append(...group.tasks.map(renderTask));
      nodes.push(h, ul);
    }
    if (!nodes.length) nodes.push(el("p", "note", all ? "No tasks yet." : "No open tasks."));
    if (more) nodes.push(el("p", "note", "More tasks are not shown."));
    $("board-count").textContent = `(${tasks.length}${more ? "+" : ""})`;
    $("board").replaceChildren(...nodes);
  }

  async function moveTask(id, status, btn) {
    for (const b of btn.parentElement.querySelectorAll("button")) b.disabled = true;
    taskErrs.delete(id);
    try {
      await api(`/rooms/${P}/tasks/${encodeURIComponent(id)}`, jsonPost("PATCH", { status }), 30000);
    } catch (err) {
      taskErrs.set(id, errText(err));
    }
    seen.board = "";
    renderBoard(); // shows the answer and enables the buttons again
    refreshBoard(true);
  }

  $("show-closed").addEventListener("change", () => refreshBoard(true));

  $("task-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const titleIn = $("task-title"), descIn = $("task-desc"), errEl = $("task-err"), add = $("task-add");
    const title = titleIn.value.trim();
    const description = descIn.value.trim();
    if (!title) { errEl.textContent = "A title is required."; titleIn.focus(); return; }
    const body = { title };
    if (description) body.description = description;
    // Signed in, the server names the creator; else it is the posting name.
    if (!account && sender()) body.created_by = sender();
    add.disabled = true;
    errEl.textContent = "";
    try {
      await api(`/rooms/${P}/tasks`, jsonPost("POST", body), 30000);
      titleIn.value = "";
      descIn.value = "";
      refreshBoard(true);
    } catch (err) {
      errEl.textContent = errText(err);
    }
    add.disabled = false;
  });

  // -- pending intents: anyone sees them, admins decide
  function showIntents() {
    $("intents-sec").hidden = !(intents.length || $("tokens").childElementCount || $("intents-err").textContent);
    $("intents-who").hidden = isAdmin || !intents.length;
  }

  async function loadIntents() {
    let body;
    try { body = await api(`/rooms/${P}/board-intents?status=pending`, {}, 20000); }
    catch (err) {
      $("intents-err").textContent = "Could not load pending intents: " + errText(err);
      showIntents();
      return false;
    }
    $("intents-err").textContent = "";
    intents = Array.isArray(body && body.intents) ? body.intents : [];
    if (changed("intents", [intents, isAdmin])) renderIntents();
    showIntents();
    return true;
  }

  function renderIntent(i) {
    const li = el("li");
    const head = el("div");
    head.append(el("strong", "", String(i.action || "unknown action")), " ", el("span", "mono", i.id));
    li.appendChild(head);
    li.appendChild(el("div", "sub", intentByline(i)));
    if (i.reason) li.appendChild(el("div", "", String(i.reason)));
    const payload = intentPayload(i);
    if (payload) li.appendChild(el("div", "mono payload", payload));
    if (isAdmin) {
      const row = el("div", "actions");
      const yes = button("Approve", (b) => decide(i.id, true, b), "small");
      const no = button("Deny", (b) => decide(i.id, false, b), "small");
      yes.setAttribute("aria-label", `Approve ${i.id}`);
      no.setAttribute("aria-label", `Deny ${i.id}`);
      row.append(yes, no);
      li.appendChild(row);
    }
    if (intentErrs.has(i.id)) li.appendChild(el("p", "panel-err", intentErrs.get(i.id)));
    return li;
  }

  function renderIntents() {
    $("intents-count").textContent = `(${intents.length})`;
    $("intents").replaceChildren(...intents.map(renderIntent));
  }

  // showToken shows an approval token, which the server answers only once.
  function showToken(id, token) {
    const box = el("div", "token-box");
    box.appendChild(el("p", "", `Approved ${id}. Its approval token, shown only this once:`));
    const input = el("input");
    input.readOnly = true;
    input.value = token;
    input.setAttribute("aria-label", `Approval token for ${id}`);
    input.addEventListener("focus", () => input.select());
    box.appendChild(input);
    box.appendChild(el("p", "sub", `The agent must pass it as board_approval_token together with board_intent_id ${id}.`));
    const row = el("div", "actions");
    row.append(
      button("Copy", async (b) => {
        try { await copyText(token); b.textContent = "Copied"; } catch { b.textContent = "Copy failed"; }
      }, "small"),
      button("Dismiss", () => { box.remove(); showIntents(); }, "small"));
    box.appendChild(row);
    $("tokens").appendChild(box);
    showIntents();
  }

  async function decide(id, approve, btn) {
    for (const b of btn.parentElement.querySelectorAll("button")) b.disabled = true;
    intentErrs.delete(id);
    try {
      const r = await api(`/rooms/${P}/board-intents/${encodeURIComponent(id)}/${approve ? "approve" : "deny"}`, jsonPost("POST", {}), 30000);
      if (approve && r && typeof r.approval_token === "string" && r.approval_token) showToken(id, r.approval_token);
      intents = intents.filter((x) => x.id !== id);
    } catch (err) {
      intentErrs.set(id, errText(err));
    }
    seen.intents = "";
    renderIntents();
    showIntents();
    refreshIntents(true);
  }

  // -- wiring
  const refreshAgents = refresher(async () => (await Promise.all([loadAgents(), loadReasoning()])).every(Boolean));
  const refreshBoard = refresher(loadBoard);
  const refreshIntents = refresher(loadIntents);
  function refreshPanel(now) {
    refreshAgents(now);
    refreshBoard(now);
    refreshIntents(now);
  }

  // panelSawMessages follows new chat messages: anyone may have joined or
  // changed status; a line of the server's may mean the board moved.
  function panelSawMessages(list) {
    refreshAgents();
    if (list.some(isSystem)) { refreshBoard(); refreshIntents(); }
  }

  // Narrow screens: tabs switch between the chat, the board and the agents.
  const tabs = [...$("tabs").querySelectorAll("[data-tab]")];
  function selectTab(name) {
    const wasChat = layout.dataset.tab === "chat";
    layout.dataset.tab = name;
    for (const t of tabs) t.setAttribute("aria-selected", String(t.dataset.tab === name));
    if (name === "chat" && !wasChat && pill.hidden) toBottom(false);
  }
  for (const tab of tabs) tab.addEventListener("click", () => selectTab(tab.dataset.tab));

  // startPanel starts the panel's refreshes: on events (above), when the
  // tab is shown again, and every PANEL_EVERY as the fallback.
  function startPanel() {
    panelOn = true;
    refreshPanel(true);
    const every = setInterval(() => { if (stopped) clearInterval(every); else refreshPanel(); }, PANEL_EVERY);
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") refreshPanel(true);
    });
  }

  // ---- opening the room: a read, not a join ------------------------------
  // showRoom puts the id people know in the heading: the repository (and
  // branch) of a Git Room, the invite code, or the room's name; the
  // two-word codename goes beside the room id.
  function showRoom(room) {
    if (typeof room.room_id === "string" && room.room_id) {
      roomId = room.room_id;
      P = enc(roomId);
    }
    isAdmin = room.role === "admin";
    const g = room.git_room && typeof room.git_room === "object" ? room.git_room : null;
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
    document.title = title + " · LetAgents";
    $("codename").textContent = room.display_name ? `“${room.display_name}” ·` : "";
    $("room-id").textContent = roomId;
    if (room.code && room.code !== title) {
      $("room-code").textContent = room.code;
      $("code-wrap").hidden = false;
    }
    $("idline").hidden = false;
    seen.intents = "";
    renderIntents();
    showIntents();
    renderBoard();
  }

  // openRoom reads the room (GET …/info, which no rate counts, so reloads
  // are free); only a room that does not exist yet is joined, which
  // creates it where the server allows.
  async function openRoom() {
    for (let backoff = 1000; ; backoff = Math.min(backoff * 2, 15000)) {
      try {
        try {
          return await api(`/rooms/${P}/info`, {}, 30000);
        } catch (err) {
          if (!(err instanceof ApiError && err.status === 404)) throw err;
          return await api(`/rooms/${P}/join`, jsonPost("POST", {}), 30000);
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
    const key = "letagents.joined:" + roomId;
    if (!opened || isAdmin || !account) return;
    try { if (sessionStorage.getItem(key)) return; sessionStorage.setItem(key, "1"); } catch { /* join anyway */ }
    try {
      const room = await api(`/rooms/${P}/join`, jsonPost("POST", {}), 30000);
      if (room && room.role === "admin" && !isAdmin) showRoom(room);
    } catch { /* the page works without it */ }
  }

  async function start() {
    const room = await openRoom();
    if (!room) return;
    if (typeof room !== "object") { fatal("Unexpected response from server."); return; }
    opened = true;
    showRoom(room);
    $("layout").hidden = false;
    textInput.focus({ preventScroll: true });
    startPanel();
    openAsMember();
    follow(connect, { isStopped, gate, setStatus, onBack: () => refreshPanel(true) });
  }
  start();
})();
