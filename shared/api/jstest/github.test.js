// Unit tests of web/js/github.js (what a GitHub event's card shows) and
// web/js/ghevents.js (which events the page knows, and how it loads the
// ones its lines name).
import { test } from "node:test";
import assert from "node:assert/strict";
import { githubCard, safeLink } from "../web/js/github.js";
import { githubEvents } from "../web/js/ghevents.js";
import { createStore, pageState } from "../web/js/store.js";

const ev = (fields) => ({
  id: "ghe_1", event_type: "pull_request", action: "opened", github_object_id: "12",
  github_object_url: "https://github.com/acme/app/pull/12", title: "Add widgets", state: "open",
  actor_login: "alice", branch: "feature/x", metadata: {}, linked_task_id: null, ...fields,
});

test("each kind has its icon, words and tone", () => {
  const cases = [
    [ev({}), "pr-open", "Pull request opened", ""],
    [ev({ state: "draft" }), "pr-open", "Draft pull request opened", ""],
    [ev({ action: "reopened" }), "pr-open", "Pull request reopened", ""],
    [ev({ action: "ready_for_review" }), "pr-open", "Pull request ready for review", ""],
    [ev({ action: "synchronize" }), "pr-open", "Pull request updated", ""],
    [ev({ action: "closed", state: "merged" }), "pr-merged", "Pull request merged", "ok"],
    [ev({ action: "closed", state: "closed" }), "pr-closed", "Pull request closed", "bad"],
    [ev({ event_type: "pull_request_review", action: "submitted", state: "approved" }), "review", "Review: approved", "ok"],
    [ev({ event_type: "pull_request_review", action: "submitted", state: "changes_requested" }), "review", "Review: changes requested", "bad"],
    [ev({ event_type: "pull_request_review", action: "submitted", state: "commented" }), "review", "Review", ""],
    [ev({ event_type: "pull_request_review", action: "dismissed", state: "dismissed" }), "review", "Review dismissed", ""],
    [ev({ event_type: "issue_comment", action: "created" }), "comment", "Comment on a pull request", ""],
    [ev({ event_type: "check_run", action: "completed", state: "success", title: "test" }), "check-pass", "Check passed", "ok"],
    [ev({ event_type: "check_run", action: "completed", state: "timed_out", title: "test" }), "check-fail", "Check failed", "bad"],
    [ev({ event_type: "check_suite", action: "completed", state: "failure" }), "check-fail", "Check suite failed", "bad"],
    [ev({ event_type: "check_suite", action: "completed", state: "skipped" }), "check-done", "Check suite finished", ""],
    [ev({ event_type: "push", action: "pushed", state: "pushed", metadata: { ref: "refs/heads/main", commits: 2 } }), "push", "Pushed to main (2 commits)", ""],
    [ev({ event_type: "release", action: "published" }), "push", "release published", ""],
  ];
  for (const [e, icon, label, tone] of cases) {
    const c = githubCard(e);
    assert.deepEqual([c.icon, c.label, c.tone], [icon, label, tone], `${e.event_type} ${e.action} ${e.state}`);
  }
});

test("the card names the object, who, the state, the branch and the task", () => {
  const c = githubCard(ev({ action: "closed", state: "merged", actor_login: "bob", linked_task_id: "task_3" }));
  assert.deepEqual([c.subject, c.actor, c.state, c.branch, c.task], ["#12 Add widgets", "bob", "merged", "feature/x", "task_3"]);
  assert.equal(githubCard(ev({ event_type: "check_run", title: "lint", state: "action_required" })).state, "action required");
  const push = githubCard(ev({ event_type: "push", github_object_id: "def4567890", title: "", branch: null, metadata: { ref: "refs/heads/main", commits: 1 } }));
  assert.deepEqual([push.subject, push.branch, push.label], ["def4567", "main", "Pushed to main (1 commit)"]);
  assert.equal(githubCard(null), null);
  assert.equal(githubCard(ev({ title: null, github_object_id: null })).subject, "Pull request opened", "nothing named: the kind");
});

test("only https links to GitHub, or to the room's own host, are kept", () => {
  const cases = [
    ["https://github.com/acme/app/pull/12", "", "https://github.com/acme/app/pull/12"],
    ["https://GitHub.com/acme/app", "", "https://github.com/acme/app"],
    ["http://github.com/acme/app", "", ""],
    ["javascript:alert(1)", "", ""],
    ["data:text/html,<b>x</b>", "", ""],
    ["https://github.com.evil.example/acme", "", ""],
    ["https://evil.example/?https://github.com/", "", ""],
    ["https://user:pw@github.com/acme", "", ""],
    ["//github.com/acme", "", ""],
    ["https://ghe.example.com/acme/app/pull/1", "", ""],
    ["https://ghe.example.com/acme/app/pull/1", "ghe.example.com", "https://ghe.example.com/acme/app/pull/1"],
    ["", "", ""],
    [null, "", ""],
  ];
  for (const [u, host, want] of cases) assert.equal(safeLink(u, host), want, String(u));
  assert.equal(githubCard(ev({ github_object_url: "javascript:alert(1)" })).href, "");
});

// A fake API for ghevents.js: the room's events, newest first, as GET
// …/events pages them (?after, ?limit), and the requests made.
function fakeEvents(ids) {
  const asked = [];
  globalThis.fetch = async (path) => {
    asked.push(path);
    const q = new URL(path, "http://x").searchParams;
    const after = Number((q.get("after") || "ghe_0").slice(4)) || Infinity;
    const limit = Number(q.get("limit"));
    const older = ids.filter((n) => n < after).sort((a, b) => b - a);
    const body = { events: older.slice(0, limit).map((n) => ev({ id: `ghe_${n}` })), has_more: older.length > limit };
    return { ok: true, status: 200, json: async () => body, headers: new Headers() };
  };
  return asked;
}

test("the lines drawn together load their events in one request; a gone event stays a line", async () => {
  const asked = fakeEvents([3, 5, 9]);
  const page = createStore(pageState("r", "r"));
  let shown = [];
  let done;
  const settled = new Promise((r) => { done = r; });
  const g = githubEvents({ page, shown: (ids) => { shown = shown.concat(ids); done(); } });
  g.need("ghe_5");
  g.need("ghe_9");
  g.need("ghe_4"); // pruned: not listed
  g.need("ghe_9");
  g.need("nonsense");
  await settled;
  assert.deepEqual(shown.sort(), ["ghe_5", "ghe_9"]);
  assert.deepEqual(asked, ["/rooms/r/events?limit=100&after=ghe_10"]);
  assert.equal(g.get("ghe_3").id, "ghe_3", "the page's events are kept too");
  g.need("ghe_4");
  g.need("ghe_5");
  await Promise.resolve();
  assert.equal(asked.length, 1, "known and gone events are not asked again");
});

test("an event of the stream draws the line that waited for it", () => {
  fakeEvents([]);
  const page = createStore(pageState("r", "r"));
  const shown = [];
  const g = githubEvents({ page, shown: (ids) => shown.push(...ids) });
  g.add(ev({ id: "ghe_7" }));
  assert.deepEqual(shown, [], "no line waited");
  assert.equal(g.get("ghe_7").title, "Add widgets");
  g.need("ghe_8");
  g.add(ev({ id: "ghe_8" }));
  assert.deepEqual(shown, ["ghe_8"]);
  g.add({ id: "<b>" });
  assert.equal(g.get("<b>"), undefined, "no event without a ghe_N id");
});
