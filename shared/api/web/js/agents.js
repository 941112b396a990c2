// The people and agents of the room: the agents messages reach now, those
// that were here and when, and the people. Each agent reads as its name
// with its owner and client as badges, then what it is doing (its status,
// its runtime's activity outside the room, its open reasoning with the
// trail of that reasoning's earlier updates, collapsed) and how soon
// messages reach it.

import { ApiError, api, errText } from "./api.js";
import { $, agentName, el } from "./dom.js";
import { changes, refresher } from "./panel.js";
import { upsertReasoning } from "./reducer.js";
import { agentGroups, agentLabel, lastSeenLine, latencyLine, lc, nativeLine, reasoningLines, reasoningOf, trailLines } from "./view.js";

function renderCard(slot, s) {
  slot.hidden = !s;
  if (!s) return;
  const { head, fields } = reasoningLines(s);
  slot.replaceChildren(el("strong", "", head.title), el("span", "", head.summary), ...fields.map((f) => el("div", "sub", f)));
  if (typeof s.task_id === "string" && s.task_id) slot.appendChild(el("div", "sub", `Task: ${s.task_id}`));
}

// agentList wires the list. page is the store, whose live agents and
// agentsByLabel it loads and whose live reasoning it shows; presence
// events change the live agents in place (reducer.js applyPresence). It
// answers refresh(now), a reload, and draw(), which draws what changed
// and then calls drawn().
export function agentList({ page, drawn = () => {} }) {
  const changed = changes();
  // Reasoning cards show while the server has the API: a 404 hides them
  // for the life of the page.
  let reasoningOn = true;
  // trails: reasoning session id → its earlier updates, read when its
  // trail is opened and again when the session has moved since; open:
  // the trails the reader opened, kept open across redraws.
  const trails = new Map();
  const open = new Set();

  async function loadTrail(s) {
    const had = trails.get(s.id);
    if (had && had.at === s.updated_at) return;
    let entry;
    try {
      const body = await api(`/rooms/${page.get().path}/reasoning-sessions/${encodeURIComponent(s.id)}?limit=500`, {}, 20000);
      entry = { at: s.updated_at, lines: trailLines(body && body.updates) };
    } catch (err) {
      entry = { at: "", lines: [], err: "Could not load the trail: " + errText(err) };
    }
    trails.set(s.id, entry);
    draw();
  }

  function renderTrail(s) {
    const d = el("details", "trail");
    d.open = open.has(s.id);
    const t = trails.get(s.id);
    d.appendChild(el("summary", "", "Reasoning trail"));
    if (t && t.err) d.appendChild(el("p", "panel-err", t.err));
    else if (!t) d.appendChild(el("p", "sub", "loading…"));
    else if (!t.lines.length) d.appendChild(el("p", "sub", "No earlier updates."));
    else {
      const ol = el("ol");
      ol.append(...t.lines.map((l) => el("li", "", l)));
      d.appendChild(ol);
    }
    d.addEventListener("toggle", () => {
      if (d.open) { open.add(s.id); loadTrail(s); } else open.delete(s.id);
    });
    if (d.open) loadTrail(s);
    return d;
  }

  // renderAgent is p's entry of the list; reasoning its latest open session.
  function renderAgent(p, reasoning) {
    const li = el("li");
    li.dataset.agent = p.actor_label || p.display_name || "";
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
    head.append(dot, ...agentName(agentLabel(p)));
    li.appendChild(head);
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
    if (!p.connected) {
      const seen = lastSeenLine(p);
      if (seen) li.appendChild(el("div", "sub seen", seen));
    }
    const latency = latencyLine(p);
    if (latency) li.appendChild(el("div", "sub latency", latency));
    const slot = el("div", "think");
    slot.setAttribute("aria-label", "Reasoning");
    renderCard(slot, reasoning);
    li.appendChild(slot);
    if (reasoning) li.appendChild(renderTrail(reasoning));
    return li;
  }

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
    if (!changed([list, hidden, reasoningOn && [...live.reasoning.values()], [...trails], [...open]])) return;
    $("agents-count").textContent = `(${list.length})`;
    const groups = agentGroups(list);
    const nodes = [];
    for (const [label, items] of [["Connected now", groups.connected], ["Were here", groups.away], ["People", groups.people]]) {
      if (!items.length) continue;
      const h = el("h3", "", label + " ");
      h.appendChild(el("span", "count", `(${items.length})`));
      const ul = el("ul", "plist");
      ul.append(...items.map((p) => renderAgent(p, reasoningOn && p.kind !== "human" ? reasoningOf(live.reasoning.values(), p) : null)));
      nodes.push(h, ul);
    }
    if (!nodes.length) nodes.push(el("p", "note", "Nobody has posted in this room yet."));
    if (hidden) nodes.push(el("p", "note", `${hidden} more not shown.`));
    $("agents").replaceChildren(...nodes);
    drawn();
  }

  const refresh = refresher(async () => (await Promise.all([loadAgents(), loadReasoning()])).every(Boolean), page);
  return { refresh, draw };
}
