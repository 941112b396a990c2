// Search asks the server (GET …/search): ranked hits over the whole room,
// each with a snippet whose matched words come marked. While it shows
// them, the results take the messages' place; a result opens its message
// in the chat, and Escape or an empty box goes back there.

import { api, errText } from "./api.js";
import { $, el } from "./dom.js";
import { fmtTime, mentionsLine, numOf } from "./view.js";

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

// roomSearch wires the search box. page is the store; gate(err) answers
// whether err closed the room; provenance(m) is what is known of m's
// sender; open(id) shows message id in the chat.
export function roomSearch({ page, gate, provenance, open }) {
  const searchIn = $("search");
  const chatEl = $("chat");
  const resultsList = $("results-list");
  const moreBtn = $("results-more");
  const chatNote = $("chat-note");
  const active = () => chatEl.classList.contains("searching");
  let seqNo = 0;       // the latest search asked; older answers are dropped
  let shownQ = "";     // the query the results shown are for
  let nextCursor = "";
  let timer = 0;

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
      end();
      history.replaceState(null, "", "#" + m.id);
      open(m.id);
    });
    const li = el("li");
    li.appendChild(b);
    return li;
  }

  async function run(q, cursor) {
    const seq = ++seqNo;
    chatEl.classList.add("searching");
    resultsList.setAttribute("aria-busy", "true");
    moreBtn.disabled = true;
    try {
      const body = await api(`/rooms/${page.get().path}/search?q=${encodeURIComponent(q)}&limit=20` + (cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""), {}, 30000);
      if (seq !== seqNo) return;
      const hits = ((body && body.results) || []).filter((h) => h && h.message && Number.isFinite(numOf(h.message.id)));
      if (!cursor) resultsList.replaceChildren();
      for (const h of hits) resultsList.appendChild(renderResult(h));
      shownQ = q;
      nextCursor = body && body.has_more && typeof body.next_cursor === "string" ? body.next_cursor : "";
      moreBtn.hidden = !nextCursor;
      const n = resultsList.children.length;
      chatNote.textContent = n ? `${n}${nextCursor ? "+" : ""} result${n === 1 ? "" : "s"} for “${q}”, best first.` : `No message matches “${q}”.`;
    } catch (err) {
      if (seq !== seqNo || gate(err)) return;
      if (!cursor) { resultsList.replaceChildren(); moreBtn.hidden = true; }
      chatNote.textContent = "Search: " + errText(err);
    } finally {
      if (seq === seqNo) { resultsList.setAttribute("aria-busy", "false"); moreBtn.disabled = false; }
    }
  }

  // end goes back to the chat, leaving the box as it is.
  function end() {
    seqNo++;
    clearTimeout(timer);
    chatEl.classList.remove("searching");
    resultsList.replaceChildren();
    moreBtn.hidden = true;
    shownQ = nextCursor = "";
    chatNote.textContent = "";
  }

  // A pause in typing searches, as does Enter at once.
  const now = () => {
    clearTimeout(timer);
    const q = searchIn.value.trim();
    if (!q) { if (active()) end(); return; }
    if (q !== shownQ || !active()) run(q, "");
  };
  searchIn.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(now, 300);
  });
  searchIn.addEventListener("keydown", (e) => {
    // Down goes from the box to the first result, for keyboards.
    if (e.key === "ArrowDown" && active() && resultsList.querySelector("button")) {
      e.preventDefault();
      resultsList.querySelector("button").focus();
      return;
    }
    if (e.key !== "Escape") return;
    e.preventDefault();
    searchIn.value = "";
    end();
    searchIn.blur();
  });
  $("search-form").addEventListener("submit", (e) => { e.preventDefault(); now(); });
  moreBtn.addEventListener("click", () => { if (nextCursor) run(shownQ, nextCursor); });

  return { active, end, focus: () => searchIn.focus() };
}
