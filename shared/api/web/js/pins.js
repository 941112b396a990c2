// Pinned messages on the room page: a marker on each pinned message and
// the room's pinned list above the timeline. room.js starts it once the
// history is loaded and hands it each message_update event; the list is
// loaded once from GET …/pins and then kept by those events.

import { api } from "./api.js";
import { el } from "./dom.js";

// pinLabel is what a pinned message's marker says, "" when m is not pinned.
export function pinLabel(m) {
  if (!m || typeof m.pinned_at !== "string" || !m.pinned_at) return "";
  return typeof m.pinned_by === "string" && m.pinned_by ? `📌 pinned by ${m.pinned_by}` : "📌 pinned";
}

// withPin returns the list of pinned messages after m changed: m in front
// when it is pinned (newest pin first), out of the list when it is not.
export function withPin(list, m) {
  const rest = list.filter((p) => p.id !== m.id);
  return pinLabel(m) ? [m, ...rest] : rest;
}

// loadedPins is the pinned list once GET …/pins answers loaded, with the
// message_update events heard while it loaded (heard, in order) put back
// on top: the answer may have been read before those changes, and the
// stream will not say them again. A change the answer already holds comes
// out the same; one it holds and a later event undoes is undone by that
// event, which is still to come.
export function loadedPins(loaded, heard) {
  return heard.reduce(withPin, loaded);
}

// initPins puts the pinned list before log and loads it for the room at
// path P (already encoded). It marks the pinned messages log shows, those
// drawn later included (it watches log), so the page's message rendering
// needs no part in it; it returns update, for each message_update event.
export function initPins(P, log) {
  let list = [];
  const box = el("section", "pins");
  box.id = "pins";
  box.setAttribute("aria-label", "Pinned messages");
  box.hidden = true;
  log.before(box);

  const draw = () => {
    box.replaceChildren();
    box.hidden = list.length === 0;
    if (!list.length) return;
    box.appendChild(el("h2", "pins-title", `Pinned (${list.length})`));
    const ol = el("ol", "pins-list");
    for (const m of list) {
      const li = el("li", "pin");
      const a = el("a", "mono", m.id);
      a.href = `#${m.id}`;
      const text = typeof m.text === "string" ? m.text : "";
      li.append(a, " ", el("span", "", text.length > 120 ? text.slice(0, 120) + "…" : text));
      ol.appendChild(li);
    }
    box.appendChild(ol);
  };

  // mark sets, or takes off, the pin marker of li, a drawn message, and
  // names its Pin tool (message.js) for what it would do.
  const mark = (li) => {
    const label = pinLabel(list.find((p) => p.id === li.dataset.id));
    const pinTool = li.querySelector(":scope > .acts .pin");
    if (pinTool) {
      pinTool.textContent = label ? "Unpin" : "Pin";
      pinTool.setAttribute("aria-label", `${pinTool.textContent} ${li.dataset.id}`);
    }
    let tag = li.querySelector(":scope > .pin-mark");
    if (!label) { if (tag) tag.remove(); li.classList.remove("pinned"); return; }
    if (!tag) { tag = el("div", "quote pin-mark"); li.prepend(tag); }
    tag.textContent = label;
    li.classList.add("pinned");
  };
  const markAll = () => { for (const li of document.querySelectorAll("li.msg[data-id]")) mark(li); };
  new MutationObserver((records) => {
    for (const r of records) {
      for (const n of r.addedNodes) if (n instanceof HTMLElement && n.matches("li.msg[data-id]")) mark(n);
    }
  }).observe(log, { childList: true });

  let heard = []; // message_update events since the load began; null once it ended
  api(`/rooms/${P}/pins`).then((r) => {
    if (!r || !Array.isArray(r.messages)) return;
    list = loadedPins(r.messages, heard);
    markAll();
    draw();
  }).catch(() => { /* an older server has no pins: nothing to show */ })
    .finally(() => { heard = null; });

  // update takes a message_update event: the message as it now is.
  const update = (m) => {
    if (!m || typeof m !== "object" || typeof m.id !== "string") return;
    if (heard) heard.push(m);
    list = withPin(list, m);
    markAll();
    draw();
  };
  return { update };
}
