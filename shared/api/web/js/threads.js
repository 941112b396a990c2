// The thread panel: a thread's root and replies, beside the chat (over it
// on narrow screens), with its own composer.

import { $, el } from "./dom.js";
import { renderMessage } from "./message.js";
import { readerKeys } from "./mentions.js";
import { numOf, rootOf } from "./view.js";

// threadPanel wires the panel. page is the store; provenance(m) is what
// is known of m's sender; loadUntil(n) loads history back to message n.
export function threadPanel({ page, provenance, loadUntil }) {
  const layout = $("layout");
  const threadLog = $("thread-log");
  let root = "";       // the thread shown, "" when the panel is closed
  let opener = null;   // the button that opened it, focused again on close

  function render() {
    const { msgs, hasOlder } = page.get();
    const first = msgs.get(root);
    const replies = [...msgs.values()].filter((m) => rootOf(m) === root && m.id !== root).sort((a, b) => numOf(a.id) - numOf(b.id));
    const items = [];
    const ctx = { reader: readerKeys(page.get().account) };
    if (first) items.push(renderMessage(first, provenance(first), ctx));
    else items.push(el("li", "note", hasOlder ? "Loading the thread…" : `${root} is not in this room.`));
    items.push(...replies.map((m) => renderMessage(m, provenance(m), ctx)));
    if (first && !replies.length) items.push(el("li", "note", "No replies yet."));
    const stick = threadLog.scrollHeight - threadLog.scrollTop - threadLog.clientHeight < 48;
    threadLog.replaceChildren(...items);
    if (stick) threadLog.scrollTop = threadLog.scrollHeight;
  }

  // open shows the thread of id, loading history back to it: every reply
  // is newer than its root, so then the whole thread is loaded.
  async function open(id, by) {
    root = id;
    opener = by || null;
    $("thread-h").textContent = `Thread of ${id}`;
    $("thread").hidden = false;
    layout.classList.add("threading");
    render();
    $("thread-text").focus();
    if (!page.get().msgs.has(id)) {
      await loadUntil(numOf(id));
      if (root === id) render();
    }
  }

  function close() {
    root = "";
    $("thread").hidden = true;
    layout.classList.remove("threading");
    if (opener && opener.isConnected) opener.focus();
    opener = null;
  }
  $("thread-close").addEventListener("click", close);

  // shown follows the messages drawn in the chat: the open thread is
  // drawn again when they are of it.
  function shown(roots) {
    if (root && roots.has(root)) render();
  }

  return { open, close, shown, root: () => root };
}
