// The board: the room's tasks by status, as a list in the side panel or
// as columns across the page (the wide board); each card with its
// description, people, dates, leases, review and links, the moves a
// room admin may make, and the form that adds a task. Live task events
// change it in place (reducer.js); this loads and draws it.

import { api, errText, jsonPost } from "./api.js";
import { $, agentName, button, el } from "./dom.js";
import { changes, refresher } from "./panel.js";
import { agentLabel, boardGroups, fmtTime, leaseActions, leaseLines, moves, reviewState, taskLinks } from "./view.js";

// taskBoard wires the board. page is the store, whose live.board it
// loads and draws; sender() is the name tasks are added under. It
// answers refresh(now), a reload, and draw(force), which draws the board
// when it changed (or whatever it is, forced).
export function taskBoard({ page, sender }) {
  const changed = changes();
  const taskErrs = new Map(); // task id → the server's answer to the last move
  const openDescs = new Set(); // the tasks whose description the reader opened, kept open across redraws

  async function loadMode() {
    let mode = "";
    try {
      const s = await api(`/rooms/${page.get().path}/board-settings`, {}, 20000);
      if (s && typeof s.manager_mode === "string") mode = s.manager_mode;
    } catch { /* optional: the board works without it */ }
    $("board-mode").textContent = mode && mode !== "off" ? "Manager mode: " + mode.replace("_", " ") : "";
    $("board-mode").hidden = !mode || mode === "off";
  }

  // linked is the room's artifacts by the task they are linked to
  // (GET …/artifacts): a card's checks and issue. Optional: a failed read
  // leaves the cards with their pull requests alone.
  let linked = new Map();
  async function loadArtifacts() {
    const next = new Map();
    try {
      const body = await api(`/rooms/${page.get().path}/artifacts?limit=250`, {}, 20000);
      for (const a of Array.isArray(body && body.artifacts) ? body.artifacts : []) {
        for (const id of Array.isArray(a && a.linked_task_ids) ? a.linked_task_ids : []) next.set(id, (next.get(id) || []).concat([a]));
      }
    } catch { return; }
    linked = next;
  }

  async function load() {
    const all = $("show-closed").checked;
    const events = page.get().live.taskEvents; // to spot task events a load may predate
    let body;
    try {
      [body] = await Promise.all([api(`/rooms/${page.get().path}/tasks?${all ? "" : "open=true&"}limit=500`, {}, 20000), loadMode(), loadArtifacts()]);
    } catch (err) { $("board-err").textContent = "Could not load the board: " + errText(err); return false; }
    $("board-err").textContent = "";
    // A task changed while this load was under way: its answer may hold
    // the task as it was, so it is read again rather than shown.
    if (events !== page.get().live.taskEvents) { refresh(); return true; }
    const board = { tasks: Array.isArray(body && body.tasks) ? body.tasks : [], all, more: !!(body && body.has_more), linked };
    page.set({ live: { ...page.get().live, board } });
    draw();
    return true;
  }

  // who draws a task's assignee or creator: an agent's label with its
  // badges, a person's name as it is.
  function who(label) {
    const l = agentLabel({ actor_label: label });
    return l.owner || l.client ? agentName(l) : [el("span", "", label)];
  }

  function renderTask(t) {
    const { admin, live } = page.get();
    const li = el("li", "card");
    li.dataset.task = t.id;
    const head = el("div");
    head.append(el("span", "mono", t.id), " ", el("span", "title", t.title || ""));
    li.appendChild(head);
    if (t.description) {
      const d = el("details", "desc");
      d.open = openDescs.has(t.id);
      d.addEventListener("toggle", () => { if (d.open) openDescs.add(t.id); else openDescs.delete(t.id); });
      d.append(el("summary", "", "Description"), el("p", "text", t.description));
      li.appendChild(d);
    }
    const people = el("div", "sub");
    people.append(...(t.assignee ? who(t.assignee) : [el("span", "", "unassigned")]));
    if (t.created_by) people.append(" · by ", ...who(t.created_by));
    li.appendChild(people);
    li.appendChild(el("div", "sub dates", `created ${fmtTime(t.created_at)} · updated ${fmtTime(t.updated_at)}`));
    for (const l of leaseLines(t)) {
      const line = el("div", "sub lease" + (l.expired ? " expired" : ""));
      line.append(`${l.label}: `, ...agentName(l.holder), ` · ${l.expiry}`);
      li.appendChild(line);
    }
    const review = reviewState(t);
    if (review) li.appendChild(el("div", "sub review", review));
    const links = taskLinks(t, linkedTo(t.id));
    if (links.length) {
      const row = el("div", "sub links");
      links.forEach((k, i) => {
        if (i) row.append(" · ");
        const text = k.text + (k.state ? ` (${k.state})` : "");
        if (!k.url) { row.append(el("span", "", text)); return; }
        const a = el("a", "", text + " ↗");
        a.href = k.url;
        a.title = k.url;
        a.target = "_blank";
        a.rel = "noopener noreferrer";
        row.append(a);
      });
      li.appendChild(row);
    }
    const row = el("div", "actions");
    for (const [label, to] of moves(t.status, admin)) {
      const b = button(label, (btn) => act(t.id, btn, "PATCH", "", { status: to }), "small");
      b.setAttribute("aria-label", `${label} ${t.id}`);
      row.appendChild(b);
    }
    const workers = live.agents.list.filter((p) => p && p.kind !== "human" && p.connected && p.session_kind !== "controller");
    for (const a of leaseActions(t, { admin, workers })) {
      if (a.action === "release") {
        const b = button(a.label, (btn) => act(t.id, btn, "POST", "/" + a.route, { action: "release", lease_id: a.lease }), "small");
        b.setAttribute("aria-label", `${a.label} lease of ${t.id}`);
        row.appendChild(b);
        continue;
      }
      const pick = el("select", "small");
      pick.setAttribute("aria-label", `Hand ${t.id} off to`);
      for (const w of a.to) {
        const o = el("option", "", agentLabel(w).name);
        o.value = w.session_id;
        o.dataset.key = w.agent_key;
        pick.appendChild(o);
      }
      const b = button(a.label, (btn) => {
        const o = pick.selectedOptions[0];
        act(t.id, btn, "POST", "/" + a.route, { action: "handoff", lease_id: a.lease, target_actor_key: o.dataset.key, target_agent_session_id: o.value });
      }, "small");
      b.setAttribute("aria-label", `Hand ${t.id} off`);
      row.append(pick, b);
    }
    if (row.childElementCount) li.appendChild(row);
    if (taskErrs.has(t.id)) li.appendChild(el("p", "panel-err", taskErrs.get(t.id)));
    return li;
  }

  // linkedTo is the room's artifacts linked to task id, as last loaded.
  const linkedTo = (id) => (page.get().live.board.linked || new Map()).get(id) || [];

  function draw(force) {
    const { board } = page.get().live;
    if (force) changed.forget();
    const wide = $("layout").classList.contains("wide-board");
    // The agents matter too: a handoff offers the workers connected now.
    if (!board || !changed([board, [...(board.linked || [])], wide, page.get().admin && page.get().live.agents.list])) return;
    const { tasks, all, more } = board;
    const cols = [];
    for (const group of boardGroups(board, wide)) {
      const col = el("section", "col");
      const h = el("h3", "", group.label + " ");
      h.appendChild(el("span", "count", `(${group.tasks.length})`));
      const ul = el("ul", "plist");
      ul.append(...group.tasks.map(renderTask));
      col.append(h, ul);
      cols.push(col);
    }
    const nodes = cols.length ? [el("div", "cols")] : [];
    if (cols.length) nodes[0].append(...cols);
    if (!tasks.length) nodes.push(el("p", "note", all ? "No tasks yet." : "No open tasks."));
    if (more) nodes.push(el("p", "note", "More tasks are not shown."));
    $("board-count").textContent = `(${tasks.length}${more ? "+" : ""})`;
    $("board").replaceChildren(...nodes);
  }

  // act sends a change of a task (a move or a lease action): its buttons
  // wait for the answer, and a refusal shows on the card.
  async function act(id, btn, method, sub, body) {
    for (const b of btn.parentElement.querySelectorAll("button, select")) b.disabled = true;
    taskErrs.delete(id);
    try {
      await api(`/rooms/${page.get().path}/tasks/${encodeURIComponent(id)}${sub}`, jsonPost(method, body), 30000);
    } catch (err) {
      taskErrs.set(id, errText(err));
    }
    draw(true); // shows the answer and enables the buttons again
    refresh(true);
  }

  // The wide board: the board's columns across the page, the chat and
  // the agents out of the way until it is narrowed again.
  $("board-wide").addEventListener("click", () => {
    const wide = $("layout").classList.toggle("wide-board");
    $("board-wide").setAttribute("aria-pressed", String(wide));
    $("board-wide").textContent = wide ? "Back to chat" : "Wide board";
    draw();
  });

  $("show-closed").addEventListener("change", () => refresh(true));

  $("task-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const titleIn = $("task-title"), descIn = $("task-desc"), errEl = $("task-err"), add = $("task-add");
    const title = titleIn.value.trim();
    const description = descIn.value.trim();
    if (!title) { errEl.textContent = "A title is required."; titleIn.focus(); return; }
    const body = { title };
    if (description) body.description = description;
    // Signed in, the server names the creator; else it is the posting name.
    if (!page.get().account && sender()) body.created_by = sender();
    add.disabled = true;
    errEl.textContent = "";
    try {
      await api(`/rooms/${page.get().path}/tasks`, jsonPost("POST", body), 30000);
      titleIn.value = "";
      descIn.value = "";
      refresh(true);
    } catch (err) {
      errEl.textContent = errText(err);
    }
    add.disabled = false;
  });

  const refresh = refresher(load, page);
  return { refresh, draw };
}
