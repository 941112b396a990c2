// Unit tests of web/js/view.js: what the room page shows.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  boardGroups, fmtTime, httpUrl, intentByline, intentPayload, mentionsLine, moves, nativeLine, numOf, parseLabel, provenance,
  reasoningLines, reasoningOf, receiptsLine, replyCount, rootOf,
} from "../web/js/view.js";

test("numOf and rootOf", () => {
  for (const [id, want] of [["msg_12", 12], ["msg_", NaN], ["task_1", NaN], [null, NaN], ["msg_3x", NaN]]) {
    assert.ok(Object.is(numOf(id), want), String(id));
  }
  assert.equal(rootOf({ id: "msg_5", thread_root_id: "msg_2" }), "msg_2");
  assert.equal(rootOf({ id: "msg_5", thread_root_id: null }), "msg_5");
});

test("parseLabel splits actor labels", () => {
  const cases = [
    ["alpha | ann's agent | Claude Code", { display: "alpha", owner: "ann", ide: "Claude Code" }],
    ["alpha | Claude Code", { display: "alpha", owner: "", ide: "Claude Code" }],
    ["beta (james' agent)", { display: "beta", owner: "james", ide: "" }],
    ["plain name", { display: "plain name", owner: "", ide: "" }],
    ["x ('s agent)", { display: "x ('s agent)", owner: "", ide: "" }],
    [undefined, { display: "", owner: "", ide: "" }],
  ];
  for (const [label, want] of cases) assert.deepEqual(parseLabel(label), want, String(label));
});

test("provenance trusts the source alone", () => {
  const known = new Map([["alpha | ann's agent", { owner_label: "Ann", ide_label: "Codex" }]]);
  const cases = [
    [{ source: "system", sender: "letagents" }, "system", "letagents", undefined],
    [{ source: null, sender: "letagents", text: "[status] x" }, "unverified", "letagents", undefined],
    [{ source: "agent", sender: "alpha | ann's agent" }, "agent", "alpha", "Ann's agent · Codex"],
    [{ source: "agent", sender: "beta | bob's agent | Gemini" }, "agent", "beta", "bob's agent · Gemini"],
    [{ source: "browser", sender: "carol" }, "person", "carol", undefined],
  ];
  for (const [m, kind, name, detail] of cases) {
    const p = provenance(m, known);
    assert.equal(p.kind, kind, JSON.stringify(m));
    assert.equal(p.name, name, JSON.stringify(m));
    assert.equal(p.detail, detail, JSON.stringify(m));
  }
});

test("receipts and mentions lines", () => {
  assert.equal(receiptsLine({ seen_by: [{ display_name: "a" }, { display_name: "b" }], unread_by: [{ display_name: "c" }] }), "seen by a, b · not yet seen by c");
  assert.equal(receiptsLine({ seen_by: "x", unread_by: [null, { display_name: 3 }] }), "");
  assert.equal(mentionsLine({ mentions: [{ display_name: "a" }, {}] }), "mentions @a");
  assert.equal(mentionsLine({}), "");
});

test("replyCount adds the replies loaded since the root was read", () => {
  const msgs = new Map([
    ["msg_1", { id: "msg_1", thread: { reply_count: 2, latest_reply_id: "msg_4" } }],
    ["msg_3", { id: "msg_3", thread_root_id: "msg_1" }],
    ["msg_4", { id: "msg_4", thread_root_id: "msg_1" }],
    ["msg_6", { id: "msg_6", thread_root_id: "msg_1" }],
    ["msg_7", { id: "msg_7" }],
  ]);
  assert.equal(replyCount(msgs, "msg_1"), 3);
  assert.equal(replyCount(msgs, "msg_7"), 0);
  assert.equal(replyCount(msgs, "msg_99"), 0);
});

test("httpUrl keeps http(s) links only", () => {
  for (const [u, want] of [["https://x.test/pr/1", "https://x.test/pr/1"], ["javascript:alert(1)", ""], ["/rel", ""], [5, ""], ["", ""]]) {
    assert.equal(httpUrl(u), want, String(u));
  }
});

test("fmtTime shows the date only when not today", () => {
  const now = new Date(2026, 11, 3, 12, 0);
  assert.ok(!/Dec/.test(fmtTime(new Date(2026, 11, 3, 9, 5).toISOString(), now)));
  assert.match(fmtTime(new Date(2026, 11, 1, 9, 5).toISOString(), now), /Dec/);
  assert.match(fmtTime(new Date(2025, 0, 1, 9, 5).toISOString(), now), /2025/);
  assert.equal(fmtTime("not a time", now), "not a time");
});

test("moves offered per status", () => {
  const cases = [
    ["proposed", false, ["accepted", "cancelled"]],
    ["accepted", false, ["cancelled"]],
    ["in_progress", false, []],
    ["in_progress", true, ["cancelled"]],
    ["in_review", false, ["merged"]],
    ["merged", true, ["done"]],
    ["done", true, []],
  ];
  for (const [status, admin, want] of cases) assert.deepEqual(moves(status, admin).map((m) => m[1]), want, `${status} admin=${admin}`);
});

test("boardGroups orders statuses and hides closed ones unless shown", () => {
  const tasks = [{ id: "1", status: "done" }, { id: "2", status: "in_progress" }, { id: "3", status: "proposed" }, { id: "4", status: "in_progress" }];
  assert.deepEqual(boardGroups({ tasks, all: false }).map((g) => [g.label, g.tasks.map((t) => t.id)]), [["proposed", ["3"]], ["in progress", ["2", "4"]]]);
  assert.deepEqual(boardGroups({ tasks, all: true }).map((g) => g.status), ["proposed", "in_progress", "done"]);
});

test("intent lines", () => {
  assert.equal(intentByline({ proposer_actor_label: "alpha" }), "by alpha");
  assert.equal(intentByline({ proposer_agent_key: "k", expires_at: "t" }, (x) => "at " + x), "by k · expires at t");
  assert.equal(intentByline({}), "by unknown");
  assert.equal(intentPayload({ payload: { task_id: "task_1" } }), '{"task_id":"task_1"}');
  assert.equal(intentPayload({ payload: { s: "x".repeat(300) } }).length, 201);
  assert.equal(intentPayload({}), "");
});

test("reasoning of an agent and its card", () => {
  const sessions = [
    { id: "1", agent_key: "k1", updated_at: "2026-12-03T10:00:00Z" },
    { id: "2", agent_key: "k1", updated_at: "2026-12-03T11:00:00Z" },
    { id: "3", actor_label: "Beta | x", updated_at: "2026-12-03T12:00:00Z" },
  ];
  assert.equal(reasoningOf(sessions, { agent_key: "k1" }).id, "2");
  assert.equal(reasoningOf(sessions, { agent_key: "k9", actor_label: "beta | X" }).id, "3");
  assert.equal(reasoningOf(sessions, { agent_key: "k9", actor_label: "gamma" }), null);
  assert.deepEqual(reasoningLines({ status: "working", latest_payload: { summary: "s", goal: "g", blocker: "b", next_action: 3 } }),
    { head: { title: "Thinking (working): ", summary: "s" }, fields: ["Goal: g", "Blocked on: b"] });
});

test("nativeLine is one line of what the runtime last reported", () => {
  const at = (iso) => "at " + iso;
  const cases = [
    [{ runtime: "codex", native_activity: { status: "working", method: "item/started", text: "running go test ./...", observed_at: "T1" } },
      "codex: working — running go test ./... · at T1"],
    [{ runtime: "codex", native_activity: { status: "blocked", method: "turn/completed", text: null, observed_at: "T2" } }, "codex: blocked · at T2"],
    [{ runtime: "", native_activity: { status: "", text: "  ", observed_at: "" } }, "runtime: working"],
    [{ runtime: "codex", native_activity: null }, ""],
    [{ runtime: "codex" }, ""],
    [null, ""],
  ];
  for (const [p, want] of cases) assert.equal(nativeLine(p, at), want, JSON.stringify(p));
});
