// The page's two composers, the room's and the thread's: what Send does
// is composer.js's; this wires their forms. Both have the name field of
// anonymous posting and show one name, kept in this browser, and an
// @mention autocomplete (what it offers is mentions.js's).

import * as composing from "./composer.js";
import { ApiError, api, jsonPost } from "./api.js";
import { $, el, store } from "./dom.js";
import { applyMention, mentionNames, mentionQuery, suggestions } from "./mentions.js";

const NAME_KEY = "letagents.name";

const newClientId = () => (crypto.randomUUID ? crypto.randomUUID() : Date.now().toString(36) + Math.random().toString(36).slice(2));

function autosize(ta) {
  ta.style.height = "auto";
  ta.style.height = Math.min(ta.scrollHeight + 2, 192) + "px";
}

// autocomplete offers, while an @mention is typed in ta, the names
// names() answers that match it: a listbox under the text box's control
// (aria-activedescendant: the focus stays in the text), ↑/↓ to move,
// Enter or Tab to insert, Escape to close, or a click. It is wired
// before the composer's own keys, which leave a key it took alone.
function autocomplete(ta, names) {
  const list = el("ul", "mention-list");
  list.id = ta.id + "-mentions";
  list.setAttribute("role", "listbox");
  list.setAttribute("aria-label", "People and agents to mention");
  list.hidden = true;
  const said = el("span", "sr-only");
  said.setAttribute("role", "status");
  ta.after(list, said);
  ta.setAttribute("aria-autocomplete", "list");
  ta.setAttribute("aria-controls", list.id);
  let q = null, shown = [], active = 0;

  function close() {
    q = null;
    shown = [];
    list.hidden = true;
    list.replaceChildren();
    ta.removeAttribute("aria-activedescendant");
    said.textContent = "";
  }
  function highlight(i) {
    active = i;
    [...list.children].forEach((li, j) => li.setAttribute("aria-selected", String(j === i)));
    ta.setAttribute("aria-activedescendant", `${list.id}-${i}`);
  }
  function update() {
    q = ta.selectionStart === ta.selectionEnd ? mentionQuery(ta.value, ta.selectionStart) : null;
    shown = q ? suggestions(names(), q.query) : [];
    if (!shown.length) { close(); return; }
    list.replaceChildren(...shown.map((name, i) => {
      const li = el("li", "", name);
      li.id = `${list.id}-${i}`;
      li.setAttribute("role", "option");
      // Chosen on mousedown, before the text box loses the focus.
      li.addEventListener("mousedown", (e) => { e.preventDefault(); choose(i); });
      return li;
    }));
    list.hidden = false;
    highlight(0);
    said.textContent = `${shown.length} to mention: ↑ ↓ to choose, Enter to insert`;
  }
  function choose(i) {
    const r = applyMention(ta.value, q.start, ta.selectionStart, shown[i]);
    close();
    ta.value = r.text;
    ta.setSelectionRange(r.caret, r.caret);
    ta.dispatchEvent(new Event("input", { bubbles: true }));
  }
  ta.addEventListener("input", update);
  // The caret moved without typing: the list follows it.
  ta.addEventListener("keyup", (e) => { if (["ArrowLeft", "ArrowRight", "Home", "End"].includes(e.key)) update(); });
  ta.addEventListener("click", update);
  ta.addEventListener("blur", close);
  ta.addEventListener("keydown", (e) => {
    if (!q || e.isComposing || e.altKey || e.ctrlKey || e.metaKey) return;
    const n = shown.length;
    if (e.key === "ArrowDown") highlight((active + 1) % n);
    else if (e.key === "ArrowUp") highlight((active + n - 1) % n);
    else if ((e.key === "Enter" || e.key === "Tab") && !e.shiftKey) choose(active);
    else if (e.key === "Escape") close();
    else return;
    e.preventDefault();
  });
}

// composers wires both. page is the store; threadRoot() is the thread
// the thread's composer replies in; sent() is told of a message the
// room's composer sent. It answers sender(), the name posts and tasks go
// under, and signedIn(), which shows the composers posting as page's
// account.
export function composers({ page, threadRoot, sent }) {
  const nameInputs = [$("name"), $("thread-name")];
  for (const input of nameInputs) {
    input.value = store.get(NAME_KEY) || "";
    input.placeholder = "your name";
    input.addEventListener("input", () => {
      for (const other of nameInputs) if (other !== input) other.value = input.value;
      store.set(NAME_KEY, input.value.trim() || null);
    });
  }

  // sender is the account's name when signed in, else the one typed.
  const sender = () => {
    const { account } = page.get();
    return account ? String(account.display_name || account.login || "") : nameInputs[0].value.trim();
  };

  // composer wires a message form: Enter sends, Shift+Enter breaks the
  // line, and a failed send keeps the text and its client_message_id, so
  // that trying again cannot post it twice.
  function composer(form, ta, btn, errEl, parent) {
    autocomplete(ta, () => mentionNames(page.get().live.agents.list));
    let c = composing.composerState();
    ta.addEventListener("input", () => { autosize(ta); c = composing.edited(c); if (errEl.textContent) errEl.textContent = ""; });
    ta.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing && e.keyCode !== 229 && !e.defaultPrevented) {
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
        await api(`/rooms/${page.get().path}/messages`, jsonPost("POST", step.body), 30000);
        // The live transport brings the message, in order, to onEvent.
        c = composing.sent(c);
        ta.value = "";
        autosize(ta);
        if (!to) sent();
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
  composer($("composer"), $("text"), $("send"), $("send-error"), () => "");
  composer($("thread-composer"), $("thread-text"), $("thread-send"), $("thread-error"), threadRoot);

  function signedIn() {
    const { account } = page.get();
    const login = String(account.login || "");
    for (const form of [$("composer"), $("thread-composer")]) {
      const as = form.querySelector(".as");
      as.textContent = `Posting as ${sender()}${account.display_name && login ? ` (${login})` : ""}, signed in with GitHub`;
      as.hidden = false;
      form.querySelector(".name").hidden = true;
      form.classList.add("signed-in");
    }
  }

  return { sender, signedIn };
}
