// Pending board intents: anyone sees them, a room admin approves or
// denies them, and an approval's token shows once.

import { api, errText, jsonPost } from "./api.js";
import { $, button, copyText, el } from "./dom.js";
import { changes, refresher } from "./panel.js";
import { intentByline, intentPayload } from "./view.js";

// intentList wires the list. page is the store (admin: who may decide).
// It answers refresh(now), a reload, and draw(), which draws it again.
export function intentList({ page }) {
  const changed = changes();
  let intents = [];              // pending intents as last loaded
  const intentErrs = new Map();  // intent id → the server's answer to the last decision

  function show() {
    $("intents-sec").hidden = !(intents.length || $("tokens").childElementCount || $("intents-err").textContent);
    $("intents-who").hidden = page.get().admin || !intents.length;
  }

  async function load() {
    let body;
    try { body = await api(`/rooms/${page.get().path}/board-intents?status=pending`, {}, 20000); }
    catch (err) {
      $("intents-err").textContent = "Could not load pending intents: " + errText(err);
      show();
      return false;
    }
    $("intents-err").textContent = "";
    intents = Array.isArray(body && body.intents) ? body.intents : [];
    if (changed([intents, page.get().admin])) render();
    show();
    return true;
  }

  function renderIntent(i) {
    const li = el("li");
    const head = el("div");
    head.append(el("strong", "", String(i.action || "unknown action")), " ", el("span", "mono", i.id));
    li.appendChild(head);
    li.appendChild(el("div", "sub", intentByline(i)));
    if (i.reason) li.appendChild(el("div", "", String(i.reason)));
    const payload = intentPayload(i);
    if (payload) li.appendChild(el("div", "mono payload", payload));
    if (page.get().admin) {
      const row = el("div", "actions");
      const yes = button("Approve", (b) => decide(i.id, true, b), "small");
      const no = button("Deny", (b) => decide(i.id, false, b), "small");
      yes.setAttribute("aria-label", `Approve ${i.id}`);
      no.setAttribute("aria-label", `Deny ${i.id}`);
      row.append(yes, no);
      li.appendChild(row);
    }
    if (intentErrs.has(i.id)) li.appendChild(el("p", "panel-err", intentErrs.get(i.id)));
    return li;
  }

  function render() {
    $("intents-count").textContent = `(${intents.length})`;
    $("intents").replaceChildren(...intents.map(renderIntent));
  }

  // showToken shows an approval token, which the server answers only once.
  function showToken(id, token) {
    const box = el("div", "token-box");
    box.appendChild(el("p", "", `Approved ${id}. Its approval token, shown only this once:`));
    const input = el("input");
    input.readOnly = true;
    input.value = token;
    input.setAttribute("aria-label", `Approval token for ${id}`);
    input.addEventListener("focus", () => input.select());
    box.appendChild(input);
    box.appendChild(el("p", "sub", `The agent must pass it as board_approval_token together with board_intent_id ${id}.`));
    const row = el("div", "actions");
    row.append(
      button("Copy", async (b) => {
        try { await copyText(token); b.textContent = "Copied"; } catch { b.textContent = "Copy failed"; }
      }, "small"),
      button("Dismiss", () => { box.remove(); show(); }, "small"));
    box.appendChild(row);
    $("tokens").appendChild(box);
    show();
  }

  async function decide(id, approve, btn) {
    for (const b of btn.parentElement.querySelectorAll("button")) b.disabled = true;
    intentErrs.delete(id);
    try {
      const r = await api(`/rooms/${page.get().path}/board-intents/${encodeURIComponent(id)}/${approve ? "approve" : "deny"}`, jsonPost("POST", {}), 30000);
      if (approve && r && typeof r.approval_token === "string" && r.approval_token) showToken(id, r.approval_token);
      intents = intents.filter((x) => x.id !== id);
    } catch (err) {
      intentErrs.set(id, errText(err));
    }
    draw();
    refresh(true);
  }

  // draw draws the list again, whatever was drawn before (the reader's
  // role, or an answer, changed).
  function draw() {
    changed.forget();
    render();
    show();
  }

  const refresh = refresher(load, page);
  return { refresh, draw };
}
