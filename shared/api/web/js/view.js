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

// moves are the status changes a person is offered from status, as the
// original page offers them (the server decides, and its refusal shows
// on the task); admins may also cancel work under way.
export function moves(status, isAdmin) {
  const out = [];
  if (status === "proposed") out.push(["Accept", "accepted"]);
  if (status === "in_review") out.push(["Merged", "merged"]);
  if (status === "merged") out.push(["Done", "done"]);
  if (status === "proposed" || status === "accepted" || (isAdmin && OPEN_STATUSES.includes(status) && status !== "merged")) out.push(["Cancel", "cancelled"]);
  return out;
}

// boardGroups are the board's tasks by status, in the board's order,
// leaving out empty statuses (and closed ones unless all are shown).
export function boardGroups({ tasks, all }) {
  const out = [];
  for (const status of all ? OPEN_STATUSES.concat(CLOSED_STATUSES) : OPEN_STATUSES) {
    const group = tasks.filter((t) => t.status === status);
    if (group.length) out.push({ status, label: status.replace("_", " "), tasks: group });
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
