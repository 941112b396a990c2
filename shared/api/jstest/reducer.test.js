// Unit tests of web/js/reducer.js: how live events change the room page.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as ev from "../web/js/events.js";
import { applyPresence, applyTask, initialState, newer, older, reduce, silenceLimit, upsertReasoning } from "../web/js/reducer.js";

const task = (id, status, title = id) => ({ id, status, title });
const loaded = (tasks, all = false) => ({ ...initialState(), board: { tasks, all, more: false } });

test("a task_update changes the loaded board in place", () => {
  const cases = [
    { name: "changed in its place", all: false, before: [task("task_1", "proposed"), task("task_2", "accepted")], t: task("task_1", "in_progress", "new"),
      want: [task("task_1", "in_progress", "new"), task("task_2", "accepted")] },
    { name: "new task added last", all: false, before: [task("task_1", "proposed")], t: task("task_2", "proposed"),
      want: [task("task_1", "proposed"), task("task_2", "proposed")] },
    { name: "closed task leaves the open board", all: false, before: [task("task_1", "proposed"), task("task_2", "in_review")], t: task("task_2", "done"),
      want: [task("task_1", "proposed")] },
    { name: "closed task stays when closed ones show", all: true, before: [task("task_1", "in_review")], t: task("task_1", "done"),
      want: [task("task_1", "done")] },
    { name: "a closed task never seen is not added", all: false, before: [], t: task("task_9", "cancelled"), want: [] },
  ];
  for (const c of cases) {
    const state = loaded(c.before, c.all);
    const r = reduce(state, ev.TASK_UPDATE, c.t);
    assert.deepEqual(r.state.board.tasks, c.want, c.name);
    assert.ok(r.draw.has("board"), c.name + ": draws the board");
    assert.ok(!r.refresh.has("board"), c.name + ": does not reload the board");
    assert.ok(r.refresh.has("agents"), c.name + ": reloads the agents");
    assert.equal(r.state.taskEvents, 1, c.name);
    assert.deepEqual(state.board.tasks, c.before, c.name + ": the old state is left as it was");
  }
});

test("a task_update before the board loaded asks for a load", () => {
  const r = reduce(initialState(), ev.TASK_UPDATE, task("task_1", "proposed"));
  assert.equal(r.state.board, null);
  assert.ok(r.refresh.has("board"));
  assert.equal(r.state.taskEvents, 1, "counted, so that a load under way is read again");
});

test("events the page cannot use change nothing", () => {
  const state = loaded([task("task_1", "proposed")]);
  for (const [type, data] of [[ev.TASK_UPDATE, null], [ev.TASK_UPDATE, { title: "no id" }], [ev.HEARTBEAT, { every_ms: 15000 }],
    [ev.ACCESS_REVOKED, { error: "gone" }], ["session_disconnect", {}], [ev.REASONING_UPDATE, "x"], [ev.MESSAGE, null]]) {
    const r = reduce(state, type, data);
    assert.equal(r.state.board, state.board, `${type} ${JSON.stringify(data)}`);
    assert.equal(r.state.reasoning, state.reasoning, `${type} ${JSON.stringify(data)}`);
    assert.equal(r.messages.length, 0);
    assert.equal(r.draw.size, 0);
  }
});

test("a message event goes to the chat", () => {
  const m = { id: "msg_3", text: "hi" };
  assert.deepEqual(reduce(initialState(), ev.MESSAGE, m).messages, [m]);
});

test("reasoning events keep the open sessions", () => {
  let state = initialState();
  const open = { id: "rs_1", status: "working", summary: "reading" };
  let r = reduce(state, ev.REASONING_UPDATE, { room_id: "r", session: open, update: null });
  assert.deepEqual([...r.state.reasoning.values()], [open]);
  assert.ok(r.draw.has("agents") && r.refresh.has("agents"));
  state = r.state;
  r = reduce(state, ev.REASONING_UPDATE, { session: { ...open, closed_at: "2026-12-03T00:00:00Z" } });
  assert.equal(r.state.reasoning.size, 0, "a closed session leaves");
  r = reduce(state, ev.REASONING_REMOVE, { room_id: "r", session_id: "rs_1" });
  assert.equal(r.state.reasoning.size, 0, "a removed session leaves");
  assert.equal(state.reasoning.size, 1, "the old state is left as it was");
  r = reduce(state, ev.REASONING_REMOVE, { session_id: "rs_404" });
  assert.equal(r.state.reasoning, state.reasoning, "removing an unknown session changes nothing");
  assert.ok(!r.draw.has("agents"));
});

test("applyTask and upsertReasoning leave their input alone", () => {
  const board = { tasks: [task("task_1", "proposed")], all: false, more: true };
  const next = applyTask(board, task("task_1", "accepted"));
  assert.equal(board.tasks[0].status, "proposed");
  assert.equal(next.more, true);
  const sessions = new Map();
  assert.equal(upsertReasoning(sessions, null), sessions);
  assert.equal(upsertReasoning(sessions, { id: "rs_1" }).size, 1);
  assert.equal(sessions.size, 0);
});

test("newer and older pick unseen messages in id order", () => {
  const m = (n) => ({ id: "msg_" + n });
  const known = new Map([["msg_5", m(5)]]);
  const list = [m(7), m(5), m(6), m(7), { id: "task_1" }, null, m(2), m(3)];
  assert.deepEqual(newer(list, 4, known).map((x) => x.id), ["msg_6", "msg_7"]);
  assert.deepEqual(older(list, 4, known).map((x) => x.id), ["msg_2", "msg_3"]);
  assert.deepEqual(newer("not a list", 0, known), []);
});

test("silenceLimit waits two heartbeats and some slack", () => {
  for (const [hb, want] of [[{ every_ms: 1000 }, 7000], [{ every_ms: 15000 }, 35000], [{}, 35000], [null, 35000], [{ every_ms: -5 }, 35000]]) {
    assert.equal(silenceLimit(hb), want, JSON.stringify(hb));
  }
});

test("a room update renames the room live and ignores data without a name", () => {
  const r = reduce(initialState(), ev.ROOM_UPDATE, { room_id: "r", display_name: "Blue Otter" });
  assert.equal(r.state.displayName, "Blue Otter");
  assert.deepEqual([...r.draw], ["room"]);
  for (const data of [null, "x", { room_id: "r" }]) {
    const bad = reduce(initialState(), ev.ROOM_UPDATE, data);
    assert.equal(bad.draw.size, 0);
    assert.equal(bad.state.displayName, undefined);
  }
});

// presence is a worker's entry as GET …/presence gives it.
const presence = (id, label, more = {}) => ({ room_id: "r", agent_session_id: id, actor_label: label, display_name: label.split(" |")[0],
  owner_label: "ann", ide_label: "Codex", status: "idle", status_text: null, source_flags: [], native_activity: null, ...more });
const withAgents = (list) => ({ ...initialState(), agents: { list, hidden: 2 } });
const human = { kind: "human", display_name: "ann", source_flags: ["messages"] };
const worker = { kind: "agent", session_id: "as_1", actor_label: "Runner | ann's agent | Codex", display_name: "Runner", status: "",
  connected: true, source_flags: ["delivery", "presence"] };

test("presence events change the agents in place, without a reload", () => {
  const cases = [
    { name: "a new status shows on the worker's card", before: [human, worker], type: ev.PRESENCE_UPDATE,
      data: presence("as_1", "Runner | ann's agent | Codex", { status: "working", status_text: "parsing", source_flags: ["presence"] }),
      check: (list) => list.length === 2 && list[1].status === "working" && list[1].status_text === "parsing" && list[1].connected === false &&
        list[0] === human },
    { name: "found by label when the list has no session for it", before: [{ ...worker, session_id: null }], type: ev.PRESENCE_UPDATE,
      data: presence("as_1", "runner | ANN's agent | codex", { status: "blocked", source_flags: ["presence"], reached_by: "live" }),
      check: (list) => list.length === 1 && list[0].status === "blocked" && list[0].session_id === "as_1" && list[0].connected === true },
    { name: "a worker that joined comes first", before: [human], type: ev.PRESENCE_UPDATE, data: presence("as_2", "New | ann's agent | Codex"),
      check: (list) => list.length === 2 && list[0].session_id === "as_2" && list[0].kind === "agent" && list[0].status === "" && list[1] === human },
    { name: "native activity shows", before: [worker], type: ev.PRESENCE_UPDATE,
      data: presence("as_1", worker.actor_label, { native_activity: { status: "working", method: "item/started", text: "go test" } }),
      check: (list) => list[0].native_activity.text === "go test" },
    { name: "an ended worker leaves", before: [human, worker], type: ev.PRESENCE_REMOVE,
      data: { room_id: "r", agent_session_id: "as_1", actor_label: worker.actor_label }, check: (list) => list.length === 1 && list[0] === human },
    { name: "an ended worker that posted stays, offline, as a reload shows it", before: [{ ...worker, status: "working", source_flags: ["presence", "messages"] }],
      type: ev.PRESENCE_REMOVE, data: { room_id: "r", agent_session_id: "as_1", actor_label: worker.actor_label },
      check: (list) => list.length === 1 && list[0].connected === false && list[0].status === null && list[0].activity_state === "offline" &&
        list[0].display_name === "Runner" },
  ];
  for (const c of cases) {
    const state = withAgents(c.before);
    const r = reduce(state, c.type, c.data);
    assert.ok(c.check(r.state.agents.list), c.name + ": " + JSON.stringify(r.state.agents.list));
    assert.equal(r.state.agents.hidden, 2, c.name + ": keeps the hidden count");
    assert.deepEqual([...r.draw], ["agents"], c.name + ": draws the agents");
    assert.equal(r.refresh.size, 0, c.name + ": reloads nothing");
    assert.equal(r.state.presenceEvents, 1, c.name + ": counted, so that a load under way is read again");
    assert.deepEqual(state.agents.list, c.before, c.name + ": the old state is left as it was");
  }
});

test("presence events the page cannot use change nothing", () => {
  const agents = { list: [human, worker], hidden: 0 };
  for (const [type, data] of [[ev.PRESENCE_UPDATE, null], [ev.PRESENCE_UPDATE, { actor_label: "no session" }], [ev.PRESENCE_REMOVE, "x"],
    [ev.PRESENCE_REMOVE, { agent_session_id: "as_9", actor_label: "Nobody | x's agent | Codex" }]]) {
    assert.equal(applyPresence(agents, type, data), agents, `${type} ${JSON.stringify(data)}`);
    const r = reduce({ ...initialState(), agents }, type, data);
    assert.equal(r.state.agents, agents);
    assert.equal(r.draw.size, 0);
    assert.equal(r.state.presenceEvents, 0);
  }
});
