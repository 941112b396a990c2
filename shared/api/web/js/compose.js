// The page's two composers, the room's and the thread's: what Send does
// is composer.js's; this wires their forms. Both have the name field of
// anonymous posting and show one name, kept in this browser.

import * as composing from "./composer.js";
import { ApiError, api, jsonPost } from "./api.js";
import { $, store } from "./dom.js";

const NAME_KEY = "letagents.name";

const newClientId = () => (crypto.randomUUID ? crypto.randomUUID() : Date.now().toString(36) + Math.random().toString(36).slice(2));

function autosize(ta) {
  ta.style.height = "auto";
  ta.style.height = Math.min(ta.scrollHeight + 2, 192) + "px";
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
