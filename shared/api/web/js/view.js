// What the room page shows, decided from the server's data without the
// DOM: who wrote a message, its receipts, times, a task's moves. The DOM
// glue (room.js) draws what these answer.

export const lc = (s) => String(s || "").toLowerCase();

// numOf is N of a message id msg_N, NaN for anything else.
export const numOf = (id) => {
  const m = /^msg_(\d+)$/.exec(String(id));
  return m ? Number(m[1]) : NaN;
};

// rootOf is the id of the thread m belongs to: its root, or m itself.
export const rootOf = (m) => (typeof m.thread_root_id === "string" && m.thread_root_id) || m.id;

// isSystem tells the server's own lines by their source, which only the
// server can set: anyone can copy a sender or a "[status]" text.
export const isSystem = (m) => m.source === "system";

// httpUrl is u when it is an absolute http(s) URL, else "".
export function httpUrl(u) {
  if (typeof u !== "string" || !u) return "";
  try {
    const x = new URL(u);
    return x.protocol === "http:" || x.protocol === "https:" ? x.href : "";
  } catch { return ""; }
}

// fmtTime is ts as the page shows it: the time today, else the date too
// (and the year when not this one), as of now.
export function fmtTime(ts, now = new Date()) {
  const d = new Date(ts);
  if (isNaN(d)) return String(ts || "");
  const time = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (d.toDateString() === now.toDateString()) return time;
  const opts = { month: "short", day: "numeric" };
  if (d.getFullYear() !== now.getFullYear()) opts.year = "numeric";
  return d.toLocaleDateString([], opts) + " " + time;
}

// parseLabel splits an agent's actor label, "<name> | <owner>'s agent |
// <ide>" (or the older "<name> (<owner>'s agent)"), as the server does.
export function parseLabel(label) {
  label = String(label || "").trim();
  const owner = (s) => {
    for (const suffix of ["'s agent", "' agent"]) {
      if (s.endsWith(suffix) && s.slice(0, -suffix.length).trim()) return s.slice(0, -suffix.length).trim();
    }
    return "";
  };
  if (label.includes(" | ")) {
    const parts = label.split(" | ").map((p) => p.trim());
    const out = { display: parts[0], owner: "", ide: "" };
    for (const p of parts.slice(1)) {
      const o = owner(p);
      if (o && !out.owner) out.owner = o;
      else if (!out.ide) out.ide = p;
    }
    return out;
  }
  const m = /^(.*) \((.+)\)$/.exec(label);
  if (m && owner(m[2])) return { display: m[1].trim(), owner: owner(m[2]), ide: "" };
  return { display: label, owner: "", ide: "" };
}

// provenance is what the server verified about a message's sender;
// agentsByLabel (lower-cased actor label → participant) adds what the
// room's agent list knows of an agent.
export function provenance(m, agentsByLabel = new Map()) {
  if (isSystem(m)) return { kind: "system", name: m.sender || "letagents", title: "A line of the server's own" };
  if (m.source === "agent") {
    const p = parseLabel(m.sender);
    const known = agentsByLabel.get(lc(m.sender));
    const owner = (known && known.owner_label) || p.owner;
    const ide = (known && known.ide_label) || p.ide;
    return { kind: "agent", name: p.display || m.sender, detail: [owner && `${owner}'s agent`, ide].filter(Boolean).join(" · "),
      title: "An agent, verified by its owner's token" };
  }
  if (m.source === "browser") return { kind: "person", name: m.sender, title: "A person signed in with GitHub, under a name the server checked is no other person's or agent's" };
  return { kind: "unverified", name: m.sender, title: "Unverified: nobody proved this name is theirs" };
}

const displayNames = (list) => Array.isArray(list) ? list.map((a) => a && a.display_name).filter((n) => typeof n === "string" && n) : [];

// receiptsLine says which agents a message reached and which it has not
// (seen_by, unread_by: on the page's reads only); "" when neither.
export function receiptsLine(m) {
  const parts = [];
  const seen = displayNames(m.seen_by), unread = displayNames(m.unread_by);
  if (seen.length) parts.push("seen by " + seen.join(", "));
  if (unread.length) parts.push("not yet seen by " + unread.join(", "));
  return parts.join(" · ");
}

// receiptsBadge is the compact form of m's receipts: text, a count of
// the agents that saw it (of all it reached, when some have not yet),
// and label, the text and who they are (receiptsLine); null when it has
// none.
export function receiptsBadge(m) {
  const seen = displayNames(m.seen_by).length, unread = displayNames(m.unread_by).length;
  if (!seen && !unread) return null;
  const text = unread ? `${seen}/${seen + unread} seen` : `${seen} seen`;
  return { text, label: `${text}: ${receiptsLine(m)}`, all: !unread };
}

// COLLAPSE_LINES is how many lines a message shows before it folds
// behind "Show more"; CHARS_PER_LINE how many characters count as a line
// when one wraps (the list's measure, about 56rem, holds some 100).
export const COLLAPSE_LINES = 12;
const CHARS_PER_LINE = 100;

// collapses says whether a message of text is long enough to fold: over
// COLLAPSE_LINES lines as they wrap, with some slack (folding away two
// lines saves nothing).
export function collapses(text) {
  let lines = 0;
  for (const line of String(text || "").split("\n")) {
    lines += Math.max(1, Math.ceil(line.length / CHARS_PER_LINE));
    if (lines > COLLAPSE_LINES + 3) return true;
  }
  return false;
}

// unreadMark is where the "New messages" divider goes: { first, seen },
// first the id of the first message the reader has not seen ("" for no
// divider), seen whether they have seen it since. Messages that arrive
// while the reader does not see the end of the list (tab hidden,
// scrolled up) put it above the first of them, unless it already marks
// an unseen batch; once seen it stays where it is until the next unseen
// batch moves it.
export const noUnread = Object.freeze({ first: "", seen: true });

// unreadArrived is mark after the messages ids arrived; visible says
// whether the reader sees them come (the tab shown, the list at its end).
export function unreadArrived(mark, ids, visible) {
  if (visible || !ids.length) return mark;
  if (mark.first && !mark.seen) return mark;
  return { first: ids[0], seen: false };
}

// unreadSeen is mark once the reader saw the end of the list.
export function unreadSeen(mark) {
  return mark.seen ? mark : { ...mark, seen: true };
}

// chimes says whether new messages ring the reader's bell (when they
// turned it on): any from someone else while the tab is hidden, and any
// that mentions them. mine(m) tells the reader's own; mentionsMe(m) a
// message that mentions them.
export function chimes(list, { hidden, mine, mentionsMe }) {
  return list.some((m) => !isSystem(m) && !mine(m) && (hidden || mentionsMe(m)));
}

// mentionsLine names the agents m @mentions, as the server resolved
// them when it was sent; "" when none.
export function mentionsLine(m) {
  const names = displayNames(m.mentions);
  return names.length ? "mentions " + names.map((n) => "@" + n).join(", ") : "";
}

// replyCount is the replies of root among msgs (id → message): the
// server's count when root was read, plus the replies loaded since.
export function replyCount(msgs, root) {
  const r = msgs.get(root);
  if (!r) return 0;
  const t = r.thread && typeof r.thread === "object" ? r.thread : null;
  const seenUpTo = (t && numOf(t.latest_reply_id)) || numOf(root);
  let n = (t && Number(t.reply_count)) || 0;
  for (const m of msgs.values()) if (rootOf(m) === root && m.id !== root && numOf(m.id) > seenUpTo) n++;
  return n;
}

export const OPEN_STATUSES = ["proposed", "accepted", "assigned", "in_progress", "blocked", "in_review", "merged"];
export const CLOSED_STATUSES = ["done", "cancelled"];

// moves are the status changes the page offers a room admin from status
// (the original's: accept, merged, done, cancel): those statuses are the
// admins' (the board rules), so a reader who is not one is offered none
// rather than buttons the server refuses. The server still decides
// (merged needs another agent's review) and its refusal shows on the task.
export function moves(status, isAdmin) {
  if (!isAdmin) return [];
  const out = [];
  if (status === "proposed") out.push(["Accept", "accepted"]);
  if (status === "in_review") out.push(["Merged", "merged"]);
  if (status === "merged") out.push(["Done", "done"]);
  if (OPEN_STATUSES.includes(status) && status !== "merged") out.push(["Cancel", "cancelled"]);
  return out;
}

// boardGroups are the board's tasks by status, in the board's order:
// the statuses that have tasks (and closed ones only when all are shown),
// or, as columns (the wide board), every status shown, empty or not.
export function boardGroups({ tasks, all }, columns = false) {
  const out = [];
  for (const status of all ? OPEN_STATUSES.concat(CLOSED_STATUSES) : OPEN_STATUSES) {
    const group = tasks.filter((t) => t.status === status);
    if (group.length || columns) out.push({ status, label: status.replace("_", " "), tasks: group });
  }
  return out;
}

// intentByline says who proposed intent i and when it expires.
export function intentByline(i, fmt = fmtTime) {
  let by = "by " + (i.proposer_actor_label || i.proposer_agent_key || "unknown");
  if (i.expires_at) by += " · expires " + fmt(i.expires_at);
  return by;
}

// intentPayload is intent i's payload as one line of JSON, cut at 200
// characters; "" when it has none.
export function intentPayload(i) {
  let payload = "";
  try { payload = JSON.stringify(i.payload) || ""; } catch { /* leave it out */ }
  return payload.length > 200 ? payload.slice(0, 200) + "…" : payload;
}

// reasoningOf is the latest open session of agent p among sessions.
export function reasoningOf(sessions, p) {
  let best = null;
  for (const s of sessions) {
    const mine = (s.agent_key && s.agent_key === p.agent_key) || lc(s.actor_label) === lc(p.actor_label);
    if (mine && (!best || String(s.updated_at) > String(best.updated_at))) best = s;
  }
  return best;
}

// reasoningLines are a reasoning card's lines: its heading (status and
// summary), then each of its snapshot's fields as [label, text].
export function reasoningLines(s) {
  const lp = s.latest_payload && typeof s.latest_payload === "object" ? s.latest_payload : {};
  const head = { title: "Thinking" + (s.status ? ` (${s.status})` : "") + ": ", summary: String(s.summary || lp.summary || "") };
  const fields = [];
  for (const [k, label] of [["goal", "Goal"], ["checking", "Checking"], ["next_action", "Next"], ["blocker", "Blocked on"]]) {
    if (typeof lp[k] === "string" && lp[k]) fields.push(`${label}: ${lp[k]}`);
  }
  return { head, fields };
}

// nativeLine is the one line an agent card gives to what p's runtime last
// reported doing outside the room (a Codex turn, say): its runtime, the
// status and the text, and when; "" before any report.
export function nativeLine(p, fmt = fmtTime) {
  const n = p && p.native_activity;
  if (!n || typeof n !== "object") return "";
  const what = [String(n.status || "working"), typeof n.text === "string" && n.text.trim()].filter(Boolean).join(" — ");
  const at = n.observed_at ? ` · ${fmt(n.observed_at)}` : "";
  return `${p.runtime || "runtime"}: ${what}${at}`;
}

// agentLabel is how an agent reads on the page: its name, and its owner
// and client (IDE or runtime) as badges beside it, from the fields the
// server split out or, failing those, from its actor label ("SageOrchid |
// Maria Chen's agent | Claude Code"), which stays the hover text.
export function agentLabel(p) {
  const parsed = parseLabel(p && p.actor_label);
  const text = (v) => (typeof v === "string" ? v.trim() : "");
  const name = text(p && p.display_name) || parsed.display || "agent";
  return { name, owner: text(p && p.owner_label) || parsed.owner, client: text(p && p.ide_label) || parsed.ide, title: text(p && p.actor_label) || name };
}

// agentGroups splits the room's participants: the agents messages reach
// now, the agents that were here (the latest seen first), and the people.
export function agentGroups(list) {
  const out = { connected: [], away: [], people: [] };
  for (const p of Array.isArray(list) ? list : []) {
    if (!p || typeof p !== "object") continue;
    if (p.kind === "human") out.people.push(p);
    else if (p.connected) out.connected.push(p);
    else out.away.push(p);
  }
  out.away.sort((a, b) => String(b.last_seen_at || "").localeCompare(String(a.last_seen_at || "")));
  return out;
}

// ago says how long before now ts was, in the largest whole unit.
function ago(ms) {
  const min = Math.round(ms / 60000);
  if (min < 1) return "moments";
  if (min < 60) return `${min} min`;
  const h = Math.round(min / 60);
  return h < 48 ? `${h} h` : `${Math.round(h / 24)} days`;
}

// lastSeenLine says when an agent that is not connected was last here.
export function lastSeenLine(p, now = new Date(), fmt = fmtTime) {
  const at = new Date(p && p.last_seen_at);
  if (!p || !p.last_seen_at || isNaN(at)) return "";
  return `last seen ${fmt(p.last_seen_at, now)} (${ago(now - at)} ago)`;
}

// latencyLine is how soon messages reached an agent over the last day
// (delivery_latency of GET …/participants); "" when the server has none.
export function latencyLine(p) {
  const l = p && p.delivery_latency;
  if (!l || typeof l !== "object" || !(Number(l.count) > 0)) return "";
  const ms = (v) => (v >= 1000 ? `${(v / 1000).toFixed(1)} s` : `${Math.round(v)} ms`);
  return `delivery: median ${ms(Number(l.p50_ms) || 0)}, p99 ${ms(Number(l.p99_ms) || 0)} over ${Number(l.count)} messages (24 h)`;
}

// expiryText says when a lease ends: "no expiry", "expires in 12 min",
// or "expired 3 min ago" (the server frees an expired lease lazily, at
// the next move).
export function expiryText(expiresAt, now = new Date()) {
  if (!expiresAt) return "no expiry";
  const at = new Date(expiresAt);
  if (isNaN(at)) return "";
  const left = at - now;
  return left > 0 ? `expires in ${ago(left)}` : `expired ${ago(-left)} ago`;
}

// leaseLines are a task's active leases as a card shows them: the work
// lease and the review lease, each with its holder and its expiry.
export function leaseLines(t, now = new Date()) {
  const out = [];
  for (const l of Array.isArray(t && t.active_leases) ? t.active_leases : []) {
    if (!l || typeof l !== "object" || (l.status && l.status !== "active")) continue;
    out.push({ id: l.id, kind: l.kind === "review" ? "review" : "work", label: l.kind === "review" ? "Review" : "Work",
      holder: agentLabel({ actor_label: l.actor_label }), agentKey: l.agent_key || "", expiry: expiryText(l.expires_at, now),
      expired: !!l.expires_at && new Date(l.expires_at) <= now });
  }
  return out;
}

// reviewState says where a task stands toward merging: merged needs a
// review lease held by an agent other than the work lease's (the server's
// rule, which it enforces); "" outside review.
export function reviewState(t) {
  if (!t || t.status !== "in_review") return "";
  const leases = Array.isArray(t.active_leases) ? t.active_leases : [];
  const work = leases.find((l) => l && l.kind === "work");
  const review = leases.find((l) => l && l.kind === "review");
  if (!review) return "needs a reviewer";
  if (work && work.agent_key && work.agent_key === review.agent_key) return "reviewer is its author: another agent must review";
  return `ready to merge once ${agentLabel({ actor_label: review.actor_label }).name} approves`;
}

// taskLinks are what a card links to: its pull request (the task's
// workflow_artifacts, from pr_url) and what the room's artifacts linked
// to it add (GET …/artifacts: its checks, its GitHub issue), one link per
// kind and URL, each with its state; only http(s) URLs, checks without one
// as text.
export function taskLinks(t, linked = []) {
  const out = [];
  const seen = new Set();
  const add = (a) => {
    if (!a || typeof a !== "object") return;
    const kind = a.kind === "merge_request" ? "pull_request" : a.kind;
    const number = Number(a.number ?? a.artifact_number) || 0;
    const url = httpUrl(a.url);
    const key = kind + " " + (url || number || a.title || "");
    if (seen.has(key)) return;
    let text;
    if (kind === "pull_request") text = number ? `PR #${number}` : "PR";
    else if (kind === "issue") text = number ? `issue #${number}` : "issue";
    else if (kind === "check_run") text = "checks" + (a.title ? `: ${a.title}` : "");
    else return;
    if (!url && kind !== "check_run") return;
    seen.add(key);
    out.push({ kind, text, url, state: typeof a.state === "string" ? a.state : "" });
  };
  // The room's artifacts first: they carry states the task's own lacks.
  for (const a of Array.isArray(linked) ? linked : []) add(a);
  for (const a of Array.isArray(t && t.workflow_artifacts) ? t.workflow_artifacts : []) add(a);
  if (!out.some((l) => l.kind === "pull_request") && t && httpUrl(t.pr_url)) add({ kind: "pull_request", url: t.pr_url });
  const order = { pull_request: 0, check_run: 1, issue: 2 };
  return out.sort((x, y) => order[x.kind] - order[y.kind]);
}

// leaseActions are the lease moves the page offers on a card: a room
// admin may release a work or review lease and hand the work to another
// connected worker (the server refuses anyone else without a worker
// session, and only an agent claims a review). handoffTo lists the
// connected workers other than the holder.
export function leaseActions(t, { admin, workers = [] } = {}) {
  if (!admin) return [];
  const out = [];
  for (const l of leaseLines(t)) {
    if (l.kind === "work") {
      out.push({ action: "release", route: "lease-action", lease: l.id, label: "Release work" });
      const to = workers.filter((w) => w && w.agent_key && w.agent_key !== l.agentKey && w.session_id);
      if (to.length) out.push({ action: "handoff", route: "lease-action", lease: l.id, label: "Hand off", to });
    } else {
      out.push({ action: "release", route: "review-lease-action", lease: l.id, label: "Release review" });
    }
  }
  return out;
}

// trailLines are a reasoning session's earlier updates (GET
// …/reasoning-sessions/{id}, oldest first) as a trail shows them, the
// newest first, leaving out the latest, which the card shows.
export function trailLines(updates, fmt = fmtTime) {
  const list = Array.isArray(updates) ? updates.filter((u) => u && typeof u === "object") : [];
  return list.slice(0, -1).reverse().map((u) => {
    const extra = [u.status, u.milestone && `milestone: ${u.milestone}`].filter((v) => typeof v === "string" && v).join(", ");
    return `${fmt(u.created_at)} — ${String(u.summary || "")}${extra ? ` (${extra})` : ""}`;
  });
}
