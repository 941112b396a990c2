// How one message is drawn, in the room's list or in a thread's panel.
// What it says is view.js's; this makes the elements.

import { avatar } from "./avatar.js";
import { button, el } from "./dom.js";
import { fmtTime, isSystem, mentionsLine, parseLabel, receiptsLine, rootOf } from "./view.js";

// idLink is a link to message id, which the page follows in place.
export function idLink(id, cls) {
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

// renderMessage draws m, whose sender's provenance is prov (view.js),
// for the room's list, with its thread buttons calling openThread(root,
// button); or, without openThread, for the thread panel (no element id,
// no thread buttons).
export function renderMessage(m, prov, openThread) {
  const inThread = !openThread;
  const li = el("li", "msg");
  if (!inThread) { li.id = m.id; li.tabIndex = -1; }
  li.dataset.id = m.id;
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
  li.append(avatar(prov.name || m.sender), meta);
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
