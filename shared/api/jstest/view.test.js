// Unit tests of web/js/view.js: what the room page shows.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  agentGroups, agentLabel, expiryText, lastSeenLine, latencyLine, leaseActions, leaseLines, reviewState, taskLinks, trailLines,
  COLLAPSE_LINES, boardGroups, chimes, collapses, fmtTime, httpUrl, intentByline, intentPayload, mentionsLine, moves, nativeLine, numOf, parseLabel, provenance,
  noUnread, reasoningLines, reasoningOf, receiptsBadge, receiptsLine, replyCount, rootOf, unreadArrived, unreadSeen,
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

test("moves offered per status: a room admin's only", () => {
  const cases = [
    ["proposed", false, []],
    ["in_review", false, []],
    ["proposed", true, ["accepted", "cancelled"]],
    ["accepted", true, ["cancelled"]],
    ["in_progress", true, ["cancelled"]],
    ["in_review", true, ["merged", "cancelled"]],
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

test("boardGroups as columns keeps empty statuses", () => {
  const tasks = [{ id: "1", status: "in_review" }];
  assert.deepEqual(boardGroups({ tasks, all: false }, true).map((g) => g.status),
    ["proposed", "accepted", "assigned", "in_progress", "blocked", "in_review", "merged"]);
  assert.equal(boardGroups({ tasks, all: true }, true).length, 9);
});

test("agentLabel: a name with owner and client badges", () => {
  const cases = [
    [{ actor_label: "SageOrchid | Maria Chen's agent | Claude Code" }, { name: "SageOrchid", owner: "Maria Chen", client: "Claude Code" }],
    [{ actor_label: "x | a's agent | Codex", display_name: "Sage", owner_label: "Maria", ide_label: "Cursor" }, { name: "Sage", owner: "Maria", client: "Cursor" }],
    [{ actor_label: "beta (james' agent)" }, { name: "beta", owner: "james", client: "" }],
    [{}, { name: "agent", owner: "", client: "" }],
  ];
  for (const [p, want] of cases) {
    const got = agentLabel(p);
    assert.deepEqual({ name: got.name, owner: got.owner, client: got.client }, want, JSON.stringify(p));
    assert.equal(got.title, p.actor_label || want.name);
  }
});

test("agentGroups splits connected agents, those that were here (latest first) and people", () => {
  const list = [
    { kind: "agent", actor_label: "a", connected: false, last_seen_at: "2026-12-05T09:00:00Z" },
    { kind: "human", display_name: "ann" },
    { kind: "agent", actor_label: "b", connected: true },
    { kind: "agent", actor_label: "c", connected: false, last_seen_at: "2026-12-05T10:00:00Z" },
    null,
  ];
  const g = agentGroups(list);
  assert.deepEqual(g.connected.map((p) => p.actor_label), ["b"]);
  assert.deepEqual(g.away.map((p) => p.actor_label), ["c", "a"]);
  assert.deepEqual(g.people.map((p) => p.display_name), ["ann"]);
  assert.deepEqual(agentGroups(undefined), { connected: [], away: [], people: [] });
});

test("lastSeenLine and latencyLine", () => {
  const now = new Date("2026-12-05T12:00:00Z");
  const fmt = (ts) => `<${ts}>`;
  assert.equal(lastSeenLine({ last_seen_at: "2026-12-05T11:48:00Z" }, now, fmt), "last seen <2026-12-05T11:48:00Z> (12 min ago)");
  assert.equal(lastSeenLine({ last_seen_at: "2026-12-05T09:00:00Z" }, now, fmt), "last seen <2026-12-05T09:00:00Z> (3 h ago)");
  assert.equal(lastSeenLine({}, now, fmt), "");
  assert.equal(latencyLine({ delivery_latency: { count: 4, p50_ms: 120, p99_ms: 2400 } }), "delivery: median 120 ms, p99 2.4 s over 4 messages (24 h)");
  assert.equal(latencyLine({ delivery_latency: null }), "");
  assert.equal(latencyLine({ delivery_latency: { count: 0 } }), "");
});

test("expiryText says when a lease ends", () => {
  const now = new Date("2026-12-05T12:00:00Z");
  const cases = [
    [null, "no expiry"],
    ["2026-12-05T12:12:00Z", "expires in 12 min"],
    ["2026-12-05T12:00:20Z", "expires in moments"],
    ["2026-12-05T14:00:00Z", "expires in 2 h"],
    ["2026-12-05T11:57:00Z", "expired 3 min ago"],
    ["not a time", ""],
  ];
  for (const [at, want] of cases) assert.equal(expiryText(at, now), want, String(at));
});

const held = (over = {}) => ({
  id: "task_1", status: "in_review",
  active_leases: [
    { id: "tl_w", kind: "work", status: "active", agent_key: "ann/builder", actor_label: "Builder | ann's agent | Codex", expires_at: "2026-12-05T12:30:00Z" },
    { id: "tl_r", kind: "review", status: "active", agent_key: "bob/checker", actor_label: "Checker | bob's agent", expires_at: null },
  ],
  ...over,
});

test("leaseLines: each lease with its holder and expiry", () => {
  const now = new Date("2026-12-05T12:00:00Z");
  const lines = leaseLines(held(), now);
  assert.deepEqual(lines.map((l) => [l.kind, l.holder.name, l.holder.owner, l.expiry, l.expired]),
    [["work", "Builder", "ann", "expires in 30 min", false], ["review", "Checker", "bob", "no expiry", false]]);
  assert.equal(leaseLines(held(), new Date("2026-12-05T13:00:00Z"))[0].expired, true);
  assert.deepEqual(leaseLines({ active_leases: [{ kind: "work", status: "released" }] }), []);
  assert.deepEqual(leaseLines({}), []);
});

test("reviewState: merge readiness as the board rules have it", () => {
  const t = held();
  assert.match(reviewState(t), /^ready to merge once Checker approves/);
  assert.equal(reviewState({ ...t, active_leases: t.active_leases.slice(0, 1) }), "needs a reviewer");
  assert.match(reviewState({ ...t, active_leases: [t.active_leases[0], { ...t.active_leases[1], agent_key: "ann/builder" }] }), /another agent must review/);
  assert.equal(reviewState({ ...t, status: "in_progress" }), "");
});

test("leaseActions: a room admin's release and handoff, to connected workers other than the holder", () => {
  const workers = [
    { agent_key: "ann/builder", session_id: "as_1" },
    { agent_key: "cat/helper", session_id: "as_2" },
    { agent_key: "dan/x" }, // no session: cannot take a handoff
  ];
  assert.deepEqual(leaseActions(held(), { admin: false, workers }), []);
  const got = leaseActions(held(), { admin: true, workers });
  assert.deepEqual(got.map((a) => [a.route, a.action, a.lease]),
    [["lease-action", "release", "tl_w"], ["lease-action", "handoff", "tl_w"], ["review-lease-action", "release", "tl_r"]]);
  assert.deepEqual(got[1].to.map((w) => w.agent_key), ["cat/helper"]);
  assert.deepEqual(leaseActions(held(), { admin: true }).map((a) => a.action), ["release", "release"]);
});

test("taskLinks: the pull request, its checks and the issue, http(s) only", () => {
  const t = { pr_url: "https://github.com/o/r/pull/7", workflow_artifacts: [{ kind: "pull_request", number: 7, url: "https://github.com/o/r/pull/7" }] };
  const linked = [
    { kind: "issue", artifact_number: 3, url: "https://github.com/o/r/issues/3", state: "open" },
    { kind: "check_run", title: "ci", state: "success", url: null },
    { kind: "pull_request", artifact_number: 7, url: "https://github.com/o/r/pull/7", state: "open" },
    { kind: "issue", artifact_number: 4, url: "javascript:alert(1)" },
    { kind: "branch", ref: "main" },
  ];
  assert.deepEqual(taskLinks(t, linked).map((l) => [l.kind, l.text, l.url, l.state]), [
    ["pull_request", "PR #7", "https://github.com/o/r/pull/7", "open"],
    ["check_run", "checks: ci", "", "success"],
    ["issue", "issue #3", "https://github.com/o/r/issues/3", "open"],
  ]);
  assert.deepEqual(taskLinks({ pr_url: "https://x.test/p/1", workflow_artifacts: [] }).map((l) => l.text), ["PR"]);
  assert.deepEqual(taskLinks({ pr_url: "ftp://x" }), []);
});

test("trailLines: the earlier updates, newest first, without the latest", () => {
  const fmt = (ts) => ts;
  const updates = [
    { created_at: "t1", summary: "start", status: null, milestone: null },
    { created_at: "t2", summary: "found it", status: "blocked", milestone: "repro" },
    { created_at: "t3", summary: "latest" },
  ];
  assert.deepEqual(trailLines(updates, fmt), ["t2 — found it (blocked, milestone: repro)", "t1 — start"]);
  assert.deepEqual(trailLines([{ created_at: "t1", summary: "only" }], fmt), []);
  assert.deepEqual(trailLines(null, fmt), []);
});

test("receiptsBadge folds the receipts to a count, naming them in its label", () => {
  assert.deepEqual(receiptsBadge({ seen_by: [{ display_name: "a" }, { display_name: "b" }] }),
    { text: "2 seen", label: "2 seen: seen by a, b", all: true });
  assert.deepEqual(receiptsBadge({ seen_by: [{ display_name: "a" }], unread_by: [{ display_name: "c" }] }),
    { text: "1/2 seen", label: "1/2 seen: seen by a · not yet seen by c", all: false });
  assert.deepEqual(receiptsBadge({ unread_by: [{ display_name: "c" }] }), { text: "0/1 seen", label: "0/1 seen: not yet seen by c", all: false });
  assert.equal(receiptsBadge({}), null);
});

test("collapses folds messages over the line limit, counting wrapped lines", () => {
  const lines = (n, len = 10) => Array.from({ length: n }, () => "x".repeat(len)).join("\n");
  const cases = [
    ["", false],
    [lines(COLLAPSE_LINES), false],
    [lines(COLLAPSE_LINES + 3), false], // folding away so little saves nothing
    [lines(COLLAPSE_LINES + 4), true],
    ["y".repeat(100 * 16), true],       // one paragraph that wraps to 16 lines
    ["y".repeat(100 * 14), false],
  ];
  for (const [text, want] of cases) assert.equal(collapses(text), want, `${text.length} chars, ${text.split("\n").length} lines`);
});

test("unread mark: placed on the first unseen batch, kept until seen, then moved by the next", () => {
  let mark = noUnread;
  mark = unreadArrived(mark, ["msg_5", "msg_6"], true);
  assert.deepEqual(mark, noUnread, "seen as they came: no divider");
  mark = unreadArrived(mark, ["msg_7", "msg_8"], false);
  assert.deepEqual(mark, { first: "msg_7", seen: false });
  mark = unreadArrived(mark, ["msg_9"], false);
  assert.deepEqual(mark, { first: "msg_7", seen: false }, "a later batch, still unseen, leaves it");
  mark = unreadArrived(mark, [], false);
  assert.equal(mark.first, "msg_7");
  mark = unreadSeen(mark);
  assert.deepEqual(mark, { first: "msg_7", seen: true });
  assert.equal(unreadSeen(mark), mark);
  assert.deepEqual(unreadArrived(mark, ["msg_10"], true), mark, "seen as it came: the divider stays");
  assert.deepEqual(unreadArrived(mark, ["msg_11"], false), { first: "msg_11", seen: false }, "the next unseen batch moves it");
});

test("chimes: others' messages while hidden, and mentions of the reader", () => {
  const mine = (m) => m.sender === "me";
  const mentionsMe = (m) => m.text.includes("@me");
  const other = { sender: "ann", text: "hi" };
  const own = { sender: "me", text: "hi @me" };
  const mention = { sender: "ann", text: "@me look" };
  const status = { sender: "letagents", source: "system", text: "@me" };
  const cases = [
    [[other], true, true], [[other], false, false],
    [[own], true, false], [[mention], false, true],
    [[status], true, false], [[], true, false], [[own, other], true, true],
  ];
  for (const [list, hidden, want] of cases) assert.equal(chimes(list, { hidden, mine, mentionsMe }), want, JSON.stringify({ list, hidden }));
});
