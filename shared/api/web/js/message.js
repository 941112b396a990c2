// How one message is drawn, in the room's list or in a thread's panel.
// What it says is view.js's and mentions.js's; this makes the elements.

import { avatar } from "./avatar.js";
import { button, copyText, el } from "./dom.js";
import { githubCard } from "./github.js";
import { mentionParts } from "./mentions.js";
import { collapses, fmtTime, isSystem, mentionsLine, parseLabel, receiptsBadge, receiptsLine, rootOf } from "./view.js";

// idLink is a link to message id, which the page follows in place.
export function idLink(id, cls) {
  const a = el("a", cls, id);
  a.href = "#" + id;
  return a;
}

// decorate makes the msg_N ids of body's text links and styles its
// @mentions as mentions, each with its key (mentions.js), which
// markReader checks; never in code or in a link. It works on the text
// nodes alone, so the server's html (which links no ids) and the
// escaped text are decorated alike.
function decorate(body) {
  const walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT);
  const nodes = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (/@|msg_\d/.test(n.data) && !n.parentElement.closest("code, pre, a")) nodes.push(n);
  }
  for (const n of nodes) {
    const frag = document.createDocumentFragment();
    const pieces = n.data.split(/\b(msg_\d+)\b/);
    for (let i = 0; i < pieces.length; i++) {
      if (i % 2) { frag.appendChild(idLink(pieces[i])); continue; }
      for (const p of mentionParts(pieces[i])) {
        if (!p.key) { frag.appendChild(document.createTextNode(p.text)); continue; }
        const span = el("span", "mention", p.text);
        span.dataset.key = p.key;
        frag.appendChild(span);
      }
    }
    n.replaceWith(frag);
  }
}

// markReader highlights the mentions of the reader in li, a drawn
// message, reader being their mention keys (mentions.js readerKeys); it
// answers whether li mentions them. The reader may be known only after
// the first messages are drawn (the session answers late): room.js then
// calls it on each.
export function markReader(li, reader) {
  let me = false;
  for (const span of li.querySelectorAll(":scope > .text .mention")) {
    const mine = reader.has(span.dataset.key);
    span.classList.toggle("me", mine);
    me = me || mine;
  }
  li.classList.toggle("mentions-me", me);
  return me;
}

// renderBody is the one place a message's body is drawn. The server's
// html (its Markdown, rendered and sanitised by the server) is used when
// it sends one; otherwise the text, escaped. Either way msg_N ids become
// links and @mentions are marked (decorate).
function renderBody(m, text) {
  const body = el("div", "text");
  if (typeof m.html === "string" && !isSystem(m)) {
    body.classList.add("md"); // sanitised by the server (shared/markdown)
    body.innerHTML = m.html;
  } else {
    body.textContent = text;
  }
  if (/@|msg_\d/.test(text)) decorate(body);
  return body;
}

// expand unfolds li's body when it is folded (a jump to it, a link in
// it focused).
export function expand(li) {
  const more = li.querySelector(":scope > .more");
  if (more && more.getAttribute("aria-expanded") === "false") more.click();
}

// foldable folds body, a long message's, behind a "Show more" toggle,
// which it answers; focus reaching a link inside unfolds it.
function foldable(body) {
  body.classList.add("collapsed");
  const more = button("Show more", () => {
    const open = body.classList.toggle("collapsed");
    more.textContent = open ? "Show more" : "Show less";
    more.setAttribute("aria-expanded", String(!open));
  }, "link more tool");
  more.setAttribute("aria-expanded", "false");
  more.setAttribute("aria-controls", body.id);
  body.addEventListener("focusin", () => { if (body.classList.contains("collapsed")) more.click(); });
  return more;
}

// tool makes one of a message's tools: reached from the message by the
// keyboard (messages.js), so no tab stop of its own.
function tool(label, onClick, cls) {
  const b = button(label, onClick, "link tool" + (cls ? " " + cls : ""));
  b.tabIndex = -1;
  return b;
}

// icon is a copy of the page's icon name (room.html's #icons).
function icon(name) {
  const t = document.getElementById("icons");
  const svg = t && t.content.querySelector(`[data-icon="${name}"]`);
  return svg ? svg.cloneNode(true) : el("span");
}

// githubBody draws card, a GitHub event's (github.js githubCard), where a
// message's text goes: what it names, linked to GitHub when the link is
// safe, then who, its state, its branch and its task. Every part is text:
// nothing of the payload is read as markup.
function githubBody(card) {
  const body = el("div", "text gh-body");
  let subject;
  if (card.href) {
    subject = el("a", "gh-subject", card.subject);
    subject.href = card.href;
    subject.target = "_blank";
    subject.rel = "noopener noreferrer";
    // The spoken name starts with the words shown (voice control).
    subject.setAttribute("aria-label", `${card.subject} (on GitHub, opens in a new tab)`);
  } else {
    subject = el("span", "gh-subject", card.subject);
  }
  const details = el("div", "gh-details");
  const add = (node) => { if (details.childNodes.length) details.append(" · "); details.append(node); };
  if (card.actor) add(el("span", "", `by ${card.actor}`));
  if (card.state) add(el("span", "gh-state" + (card.tone ? " " + card.tone : ""), card.state));
  if (card.branch) add(el("span", "mono", card.branch));
  if (card.task) add(el("span", "mono", card.task));
  body.append(subject);
  if (details.childNodes.length) body.append(details);
  return body;
}

// renderMessage draws m, whose sender's provenance is prov (view.js).
// A status line that announces a GitHub event (github_event_id) is drawn
// as the event's card when ctx.github (ghevents.js) knows the event, and
// asks for it otherwise (a line until then); ctx.repoHost is the room's
// repository host, which its links may name besides github.com.
// ctx.reader is the reader's mention keys (mentions.js readerKeys). With
// ctx.openThread(root, button) it draws m for the room's list: focusable,
// with its tools (Reply, Copy link, and Pin, which ctx.pin(id, button)
// does and the list shows to admins alone); without, for the thread
// panel (no element ids of the list's, no tools).
export function renderMessage(m, prov, ctx) {
  const inList = !!ctx.openThread;
  const idp = inList ? "" : "t-"; // the panel may show a message the list shows too
  const li = el("li", "msg");
  if (inList) {
    li.id = m.id;
    li.tabIndex = 0;
    li.setAttribute("aria-describedby", "msg-keys");
  }
  li.dataset.id = m.id;
  let text = typeof m.text === "string" ? m.text : "";
  const gh = prov.kind === "system" && typeof m.github_event_id === "string" && ctx.github ? m.github_event_id : "";
  const ev = gh ? ctx.github.get(gh) : null;
  if (gh && !ev) ctx.github.need(gh);
  const card = ev ? githubCard(ev, ctx.repoHost) : null;
  if (gh) li.dataset.ghe = gh;
  if (card) {
    li.classList.add("gh-event");
    if (card.tone) li.classList.add(card.tone);
  } else if (prov.kind === "system") {
    li.classList.add("status-line");
    if (text.startsWith("[status] ")) text = text.slice(9);
  }
  if (inList) {
    const root = rootOf(m);
    const acts = el("div", "acts");
    acts.setAttribute("role", "toolbar");
    acts.setAttribute("aria-label", `Tools of ${m.id}`);
    const reply = tool("Reply", () => ctx.openThread(root, reply));
    reply.setAttribute("aria-label", `Reply in the thread of ${root}`);
    const copy = tool("", async () => {
      try { await copyText(new URL("#" + m.id, location.href).href); say("Copied"); } catch { say("Copy failed"); }
      setTimeout(() => say("Copy link"), 1600);
    });
    // The spoken name starts with the words shown (voice control).
    const say = (t) => { copy.textContent = t; copy.setAttribute("aria-label", t === "Copy link" ? `Copy link to ${m.id}` : `${t}: link to ${m.id}`); };
    say("Copy link");
    const pin = tool("Pin", () => ctx.pin(m.id, pin), "pin");
    pin.setAttribute("aria-label", `Pin ${m.id}`);
    acts.append(reply, copy, pin);
    li.appendChild(acts);
  }
  const meta = el("div", "meta");
  const who = el("span", "sender", card ? "GitHub" : prov.name || "unknown");
  who.title = m.sender || "";
  const badge = el("span", "badge " + prov.kind, prov.kind);
  badge.title = card ? "A line of the server's own: GitHub told it, by a signed webhook delivery" : prov.title;
  meta.append(who, badge);
  if (card) meta.appendChild(el("span", "gh-kind", card.label));
  if (prov.detail) meta.appendChild(el("span", "", prov.detail));
  const t = el("time", "", fmtTime(m.timestamp));
  if (m.timestamp) t.dateTime = m.timestamp;
  t.title = [m.id, m.timestamp].filter(Boolean).join(" · ");
  meta.appendChild(t);
  if (inList && rootOf(m) === m.id) {
    const replies = tool("", () => ctx.openThread(m.id, replies), "replies");
    replies.hidden = true;
    meta.appendChild(replies);
  }
  if (card) {
    const tile = el("span", "avatar gh-icon");
    tile.setAttribute("aria-hidden", "true");
    tile.appendChild(icon(card.icon));
    li.append(tile, meta);
  } else {
    li.append(avatar(prov.name || m.sender), meta);
  }
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
  const body = card ? githubBody(card) : renderBody(m, text);
  body.id = `${idp}body-${m.id}`;
  li.appendChild(body);
  if (!card && text.includes("@")) markReader(li, ctx.reader);
  if (!card && collapses(text)) li.appendChild(foldable(body));
  const ment = mentionsLine(m);
  if (ment) li.appendChild(el("div", "quote mentions", ment));
  const receipts = receiptsBadge(m);
  if (receipts) {
    // Folded to a count; its button shows who.
    const line = el("div", "quote receipts", receiptsLine(m));
    line.id = `${idp}receipts-${m.id}`;
    line.hidden = true;
    const b = tool("", () => {
      line.hidden = !line.hidden;
      b.setAttribute("aria-expanded", String(!line.hidden));
    }, "seen" + (receipts.all ? " all" : ""));
    const tick = el("span", "", receipts.all ? "✓✓ " : "✓ ");
    tick.setAttribute("aria-hidden", "true");
    b.append(tick, receipts.text);
    b.title = receipts.label;
    b.setAttribute("aria-label", receipts.label);
    b.setAttribute("aria-expanded", "false");
    b.setAttribute("aria-controls", line.id);
    meta.appendChild(b);
    li.appendChild(line);
  }
  // The panel's messages are no tab stops: their buttons are.
  if (!inList) for (const b of li.querySelectorAll(".tool")) b.tabIndex = 0;
  return li;
}
