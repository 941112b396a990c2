// The room's list of messages: the latest page, older pages on the way
// up, new ones as they arrive, the "new messages" pill and divider, the
// status-line filter, jumps to a msg_N and the keys that move between
// messages and their tools. What is loaded lives in the page's store
// (msgs, lastNum, oldestNum, hasOlder, historyLoaded).

import { api, errText } from "./api.js";
import { $, el, flash, store } from "./dom.js";
import { expand, renderMessage } from "./message.js";
import { readerKeys } from "./mentions.js";
import { newer, older } from "./reducer.js";
import { noUnread, numOf, replyCount, rootOf, unreadArrived, unreadSeen } from "./view.js";

const PAGE = 100;                  // messages per history page
export const RENDER = "&render=html"; // ask for the server's sanitised html of each message
const STATUS_KEY = "letagents.status-lines";

// messageList wires the list. page is the store; gate(err) answers
// whether err closed the room; provenance(m) is what is known of m's
// sender; openThread(root, opener) opens a thread; pin(id, button) pins
// or unpins a message; mine(m) tells the reader's own messages;
// shown(roots) is told the threads of messages just drawn, fresh(list)
// the messages that just arrived live; reveal() brings the chat into
// view before a jump; github is the room's GitHub events (ghevents.js),
// whose lines are drawn as their cards.
export function messageList({ page, gate, provenance, openThread, pin, mine, shown, fresh, reveal, github }) {
  const scroller = $("scroller");
  const log = $("log");
  const pill = $("pill");
  const chatNote = $("chat-note");
  let unseen = 0;
  let emptyNote = null;     // "No messages yet." until the first message
  let olderBusy = null;     // the load of an older page under way
  let unread = noUnread;    // where the "New messages" divider goes (view.js)
  const divider = el("li", "unread", "New messages");

  const atBottom = () => scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 48;
  const toBottom = (smooth) => scroller.scrollTo({ top: scroller.scrollHeight, behavior: smooth ? "smooth" : "auto" });

  function showReplyCount(root) {
    const li = document.getElementById(root);
    const b = li && li.querySelector(".replies");
    if (!b) return;
    const n = replyCount(page.get().msgs, root);
    b.hidden = !n;
    b.textContent = `${n} repl${n === 1 ? "y" : "ies"}`;
    b.setAttribute("aria-label", `${n} repl${n === 1 ? "y" : "ies"} to ${root}: open the thread`);
  }

  function drawn(list) {
    const roots = new Set(list.map(rootOf));
    for (const root of roots) showReplyCount(root);
    shown(roots);
  }

  function renderInto(list) {
    const frag = document.createDocumentFragment();
    for (const m of list) frag.appendChild(renderMessage(m, provenance(m), drawCtx()));
    return frag;
  }

  const drawCtx = () => ({ openThread, pin, reader: readerKeys(page.get().account), github, repoHost: page.get().repoHost });

  // redraw draws again the lines of GitHub events ids, now loaded, as
  // their cards, in place; a line that had the focus passes it on.
  function redraw(ids) {
    const { msgs } = page.get();
    for (const id of ids) {
      for (const li of log.querySelectorAll(`li.msg[data-ghe="${CSS.escape(id)}"]`)) {
        const m = msgs.get(li.id);
        if (!m) continue;
        const card = renderMessage(m, provenance(m), drawCtx());
        const focused = li.contains(document.activeElement);
        li.replaceWith(card);
        if (focused) card.focus({ preventScroll: true });
        showReplyCount(li.id);
      }
    }
  }

  // ---- the "New messages" divider: above the first message that came
  // while the reader did not see the end of the list ----------------------
  const inView = () => document.visibilityState === "visible" && atBottom();
  function arrived(list, seen) {
    const ids = list.filter((m) => !mine(m)).map((m) => m.id);
    unread = unreadArrived(unread, ids, seen);
    const first = unread.first && document.getElementById(unread.first);
    if (first && first.previousElementSibling !== divider) first.before(divider);
  }
  function sawEnd() {
    if (inView()) unread = unreadSeen(unread);
  }
  document.addEventListener("visibilitychange", sawEnd);

  // add appends the messages newer than any shown, in id order, and
  // answers how many.
  function add(list, initial) {
    const { msgs, lastNum, oldestNum } = page.get();
    const fresher = newer(list, lastNum, msgs);
    if (!fresher.length) return 0;
    for (const m of fresher) msgs.set(m.id, m);
    const stick = initial || atBottom();
    page.set({ lastNum: numOf(fresher[fresher.length - 1].id), oldestNum: Math.min(oldestNum, numOf(fresher[0].id)) });
    if (emptyNote) { emptyNote.remove(); emptyNote = null; }
    log.appendChild(renderInto(fresher));
    drawn(fresher);
    if (!initial) {
      arrived(fresher, stick && document.visibilityState === "visible");
      fresh(fresher);
    }
    if (stick) {
      toBottom(false);
    } else {
      unseen += fresher.length;
      pill.textContent = `${unseen} new message${unseen === 1 ? "" : "s"} ↓`;
      pill.hidden = false;
    }
    return fresher.length;
  }

  // prepend puts older messages above the ones shown, keeping what the
  // reader looks at where it is.
  function prepend(list) {
    const { msgs, oldestNum } = page.get();
    const earlier = older(list, oldestNum, msgs);
    if (!earlier.length) return 0;
    for (const m of earlier) msgs.set(m.id, m);
    page.set({ oldestNum: numOf(earlier[0].id) });
    const fromBottom = scroller.scrollHeight - scroller.scrollTop;
    log.prepend(renderInto(earlier));
    scroller.scrollTop = scroller.scrollHeight - fromBottom;
    drawn(earlier);
    return earlier.length;
  }

  scroller.addEventListener("scroll", () => {
    if (!pill.hidden && atBottom()) { pill.hidden = true; unseen = 0; }
    sawEnd();
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
    const { hasOlder, historyLoaded, msgs } = page.get();
    $("older-btn").hidden = !hasOlder || !!olderBusy;
    $("older-note").textContent = note != null ? note : olderBusy ? "Loading earlier messages…" : hasOlder || !historyLoaded || !msgs.size ? "" : "The start of the room.";
  }

  async function loadHistory() {
    const body = await api(`/rooms/${page.get().path}/messages?before=latest&limit=${PAGE}${RENDER}`, {}, 30000);
    const hasOlder = !!(body && (body.has_older ?? body.has_more));
    page.set({ hasOlder });
    const list = (body && body.messages) || [];
    if (!list.length && !hasOlder) {
      emptyNote = el("li", "note", "No messages yet.");
      log.appendChild(emptyNote);
    }
    add(list, true);
    page.set({ historyLoaded: true });
    log.setAttribute("aria-busy", "false");
    showOlder();
  }

  // loadOlder reads the page before the oldest message shown; one at a
  // time. It answers whether it worked.
  function loadOlder() {
    if (olderBusy) return olderBusy;
    const { historyLoaded, hasOlder, stopped } = page.get();
    if (!historyLoaded || !hasOlder || stopped) return Promise.resolve(!hasOlder);
    olderBusy = (async () => {
      showOlder();
      log.setAttribute("aria-busy", "true");
      try {
        const { path, oldestNum } = page.get();
        const body = await api(`/rooms/${path}/messages?before=msg_${oldestNum}&limit=${PAGE}${RENDER}`, {}, 30000);
        page.set({ hasOlder: !!(body && (body.has_older ?? body.has_more)) });
        prepend((body && body.messages) || []);
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
    while (page.get().oldestNum > n && page.get().hasOlder) {
      if (!(await loadOlder())) return false;
    }
    return true;
  }

  // ---- the status-line filter --------------------------------------------
  const showStatus = $("show-status");
  showStatus.checked = store.get(STATUS_KEY) !== "hidden";
  function applyStatusFilter() {
    const show = showStatus.checked;
    log.classList.toggle("hide-status", !show);
    store.set(STATUS_KEY, show ? null : "hidden");
  }
  showStatus.addEventListener("change", applyStatusFilter);
  applyStatusFilter();

  // ---- links to msg_N: jump there, loading it first when needed ----------
  async function jumpTo(id) {
    const n = numOf(id);
    if (!Number.isFinite(n) || !page.get().historyLoaded) return;
    if (n < 1 || n > page.get().lastNum) { flash(chatNote, `${id} is not in this room.`); return; }
    if (n < page.get().oldestNum) {
      chatNote.textContent = `Loading up to ${id}…`;
      const ok = await loadUntil(n);
      chatNote.textContent = "";
      if (!ok) { flash(chatNote, `Could not load ${id}.`); return; }
    }
    const li = document.getElementById(id);
    if (!li || !log.contains(li)) { flash(chatNote, `${id} is not in this room.`); return; }
    if (li.classList.contains("status-line") && !showStatus.checked) { showStatus.checked = true; applyStatusFilter(); }
    reveal();
    expand(li);
    li.scrollIntoView({ block: "center" });
    li.focus({ preventScroll: true });
    li.classList.add("flash");
    setTimeout(() => li.classList.remove("flash"), 2500);
  }

  // ---- keys: a message is one tab stop; Enter or → goes to its tools,
  // ←/→ between them, Escape back; ↑/↓ go to the message before or after.
  log.addEventListener("keydown", (e) => {
    const li = e.target instanceof Element ? e.target.closest("li.msg") : null;
    if (!li || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
    const tools = [...li.querySelectorAll(".tool")].filter((b) => !b.hidden && b.getClientRects().length);
    let to = null;
    if (e.target === li) {
      if (e.key === "Enter" || e.key === "ArrowRight") to = tools[0];
      else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        to = li;
        do { to = e.key === "ArrowDown" ? to.nextElementSibling : to.previousElementSibling; }
        while (to && !(to.matches("li.msg") && to.getClientRects().length));
      }
    } else {
      const i = tools.indexOf(e.target);
      if (i < 0) return;
      const n = tools.length;
      to = { ArrowRight: tools[(i + 1) % n], ArrowLeft: tools[(i + n - 1) % n], Home: tools[0], End: tools[n - 1], Escape: li }[e.key];
    }
    if (!to) return;
    e.preventDefault(); // Escape then leaves an open thread open
    to.focus();
  });

  return { add, redraw, loadHistory, loadUntil, jumpTo, toBottom, pillShown: () => !pill.hidden };
}
