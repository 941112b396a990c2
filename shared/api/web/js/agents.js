// The people and agents of the room: presence, owner and IDE, what an
// agent's runtime does outside the room, and a card of its open reasoning.

import { ApiError, api, errText } from "./api.js";
import { $, el } from "./dom.js";
import { changes, refresher } from "./panel.js";
import { upsertReasoning } from "./reducer.js";
import { lc, nativeLine, parseLabel, reasoningLines, reasoningOf } from "./view.js";

function renderCard(slot, s) {
  slot.hidden = !s;
  if (!s) return;
  const { head, fields } = reasoningLines(s);
  slot.replaceChildren(el("strong", "", head.title), el("span", "", head.summary), ...fields.map((f) => el("div", "sub", f)));
}

// renderAgent is p's entry of the list; reasoning its latest open session.
function renderAgent(p, reasoning) {
  const li = el("li");
  const head = el("div");
  if (p.kind === "human") {
    head.append(el("strong", "", p.display_name || "someone"), " ", el("span", "badge person", "person"));
    li.appendChild(head);
    return li;
  }
  // An agent: the dot says whether messages reach it now.
  const dot = el("span", "dot" + (p.connected ? " on" : ""));
  dot.setAttribute("role", "img");
  dot.setAttribute("aria-label", p.connected ? "connected" : "not connected");
  dot.title = p.connected ? "connected" : "not connected";
  head.append(dot, el("strong", "", p.display_name || parseLabel(p.actor_label).display || "agent"));
  li.appendChild(head);
  const who = [p.owner_label && `${p.owner_label}'s agent`, p.ide_label].filter(Boolean).join(" · ");
  if (who) li.appendChild(el("div", "sub", who));
  const status = [p.status, p.status_text].filter(Boolean).join(" — ");
  if (status) li.appendChild(el("div", "sub", status));
  // What its runtime does outside the room: a line of the card, never a
  // chat message.
  const native = nativeLine(p);
  if (native) {
    const line = el("div", "sub native", native);
    line.title = [native, p.native_activity.method].filter(Boolean).join(" · ");
    li.appendChild(line);
  }
  const slot = el("div", "think");
  slot.setAttribute("aria-label", "Reasoning");
  renderCard(slot, reasoning);
  li.appendChild(slot);
  return li;
}

// agentList wires the list. page is the store, whose live agents and
// agentsByLabel it loads and whose live reasoning it shows; presence
// events change the live agents in place (reducer.js applyPresence). It
// answers refresh(now), a reload, and draw(), which draws what changed.
export function agentList({ page }) {
  const changed = changes();
  // Reasoning cards show while the server has the API: a 404 hides them
  // for the life of the page.
  let reasoningOn = true;

  async function loadAgents() {
    const events = page.get().live.presenceEvents; // to spot presence events a load may predate
    let body;
    try { body = await api(`/rooms/${page.get().path}/participants`, {}, 20000); }
    catch (err) { $("agents-err").textContent = "Could not load agents: " + errText(err); return false; }
    $("agents-err").textContent = "";
    // A worker changed while this load was under way: its answer may hold
    // the worker as it was, so it is read again rather than shown.
    if (events !== page.get().live.presenceEvents) { refresh(); return true; }
    const agents = { list: Array.isArray(body && body.participants) ? body.participants : [], hidden: Number(body && body.hidden_count) || 0 };
    const agentsByLabel = new Map();
    for (const p of agents.list) if (p && p.actor_label) agentsByLabel.set(lc(p.actor_label), p);
    page.set({ live: { ...page.get().live, agents }, agentsByLabel });
    draw();
    return true;
  }

  async function loadReasoning() {
    if (!reasoningOn) return true;
    let body;
    try { body = await api(`/rooms/${page.get().path}/reasoning-sessions?open=true`, {}, 20000); }
    catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) return false;
      reasoningOn = false;
      page.set({ live: { ...page.get().live, reasoning: new Map() } });
      draw();
      return true;
    }
    let sessions = new Map();
    for (const s of Array.isArray(body && body.sessions) ? body.sessions : []) sessions = upsertReasoning(sessions, s);
    page.set({ live: { ...page.get().live, reasoning: sessions } });
    draw();
    return true;
  }

  function draw() {
    const { live } = page.get();
    const { list, hidden } = live.agents;
    if (!changed([list, hidden, reasoningOn && [...live.reasoning.values()]])) return;
    $("agents-count").textContent = `(${list.length})`;
    const items = list.map((p) => renderAgent(p, reasoningOn ? reasoningOf(live.reasoning.values(), p) : null));
    if (!items.length) items.push(el("li", "note", "Nobody has posted in this room yet."));
    if (hidden) items.push(el("li", "note", `${hidden} more not shown.`));
    $("agents").replaceChildren(...items);
  }

  const refresh = refresher(async () => (await Promise.all([loadAgents(), loadReasoning()])).every(Boolean), page);
  return { refresh, draw };
}
