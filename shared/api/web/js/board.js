// The board: the room's tasks by status, the moves a person may make, and
// the form that adds a task. Live task events change it in place
// (reducer.js); this loads and draws it.

import { api, errText, jsonPost } from "./api.js";
import { $, button, el } from "./dom.js";
import { changes, refresher } from "./panel.js";
import { boardGroups, httpUrl, moves } from "./view.js";

// taskBoard wires the board. page is the store, whose live.board it
// loads and draws; sender() is the name tasks are added under. It
// answers refresh(now), a reload, and draw(force), which draws the board
// when it changed (or whatever it is, forced).
export function taskBoard({ page, sender }) {
  const changed = changes();
  const taskErrs = new Map(); // task id → the server's answer to the last move

  async function loadMode() {
    let mode = "";
    try {
      const s = await api(`/rooms/${page.get().path}/board-settings`, {}, 20000);
      if (s && typeof s.manager_mode === "string") mode = s.manager_mode;
    } catch { /* optional: the board works without it */ }
    $("board-mode").textContent = mode && mode !== "off" ? "Manager mode: " + mode.replace("_", " ") : "";
    $("board-mode").hidden = !mode || mode === "off";
  }

  async function load() {
    const all = $("show-closed").checked;
    const events = page.get().live.taskEvents; // to spot task events a load may predate
    let body;
    try {
      [body] = await Promise.all([api(`/rooms/${page.get().path}/tasks?${all ? "" : "open=true&"}limit=500`, {}, 20000), loadMode()]);
    } catch (err) { $("board-err").textContent = "Could not load the board: " + errText(err); return false; }
    $("board-err").textContent = "";
    // A task changed while this load was under way: its answer may hold
    // the task as it was, so it is read again rather than shown.
    if (events !== page.get().live.taskEvents) { refresh(); return true; }
    const board = { tasks: Array.isArray(body && body.tasks) ? body.tasks : [], all, more: !!(body && body.has_more) };
    page.set({ live: { ...page.get().live, board } });
    draw();
    return true;
  }

  function renderTask(t) {
    const li = el("li");
    const head = el("div");
    head.append(el("span", "mono", t.id), " ", el("span", "", t.title || ""));
    li.appendChild(head);
    const sub = el("div", "sub", [t.assignee || "unassigned", t.created_by && `by ${t.created_by}`].filter(Boolean).join(" · "));
    const pr = httpUrl(t.pr_url);
    if (pr) {
      const a = el("a", "", "PR ↗");
      a.href = pr;
      a.title = pr;
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      sub.append(" · ", a);
    }
    li.appendChild(sub);
    const row = el("div", "actions");
    for (const [label, to] of moves(t.status, page.get().admin)) {
      const b = button(label, (btn) => move(t.id, to, btn), "small");
      b.setAttribute("aria-label", `${label} ${t.id}`);
      row.appendChild(b);
    }
    if (row.childElementCount) li.appendChild(row);
    if (taskErrs.has(t.id)) li.appendChild(el("p", "panel-err", taskErrs.get(t.id)));
    return li;
  }

  function draw(force) {
    const { board } = page.get().live;
    if (force) changed.forget();
    if (!board || !changed(board)) return;
    const { tasks, all, more } = board;
    const nodes = [];
    for (const group of boardGroups(board)) {
      const h = el("h3", "", group.label + " ");
      h.appendChild(el("span", "count", `(${group.tasks.length})`));
      const ul = el("ul", "plist");
      ul.append(...group.tasks.map(renderTask));
      nodes.push(h, ul);
    }
    if (!nodes.length) nodes.push(el("p", "note", all ? "No tasks yet." : "No open tasks."));
    if (more) nodes.push(el("p", "note", "More tasks are not shown."));
    $("board-count").textContent = `(${tasks.length}${more ? "+" : ""})`;
    $("board").replaceChildren(...nodes);
  }

  async function move(id, status, btn) {
    for (const b of btn.parentElement.querySelectorAll("button")) b.disabled = true;
    taskErrs.delete(id);
    try {
      await api(`/rooms/${page.get().path}/tasks/${encodeURIComponent(id)}`, jsonPost("PATCH", { status }), 30000);
    } catch (err) {
      taskErrs.set(id, errText(err));
    }
    draw(true); // shows the answer and enables the buttons again
    refresh(true);
  }

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
