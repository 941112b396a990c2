import { test } from "node:test";
import assert from "node:assert/strict";
import { loadedPins, pinLabel, withPin } from "../web/js/pins.js";

test("pinLabel says who pinned, and nothing for an unpinned message", () => {
  assert.equal(pinLabel({ id: "msg_1" }), "");
  assert.equal(pinLabel({ id: "msg_1", pinned_at: "2026-01-01T00:00:00.000Z", pinned_by: "ann" }), "📌 pinned by ann");
  assert.equal(pinLabel({ id: "msg_1", pinned_at: "2026-01-01T00:00:00.000Z" }), "📌 pinned");
  assert.equal(pinLabel(null), "");
});

test("withPin puts a new pin first and takes an unpinned message out", () => {
  const a = { id: "msg_1", pinned_at: "t1", pinned_by: "ann" };
  const b = { id: "msg_2", pinned_at: "t2", pinned_by: "bob" };
  assert.deepEqual(withPin([a], b).map((m) => m.id), ["msg_2", "msg_1"]);
  assert.deepEqual(withPin([b, a], { id: "msg_2" }).map((m) => m.id), ["msg_1"]);
  assert.deepEqual(withPin([a], { ...a, pinned_by: "carol" }).map((m) => m.pinned_by), ["carol"]);
});

test("loadedPins keeps the changes heard while the list loaded", () => {
  const a = { id: "msg_1", pinned_at: "t1", pinned_by: "ann" };
  const b = { id: "msg_2", pinned_at: "t2", pinned_by: "bob" };
  const ids = (l) => l.map((m) => m.id);
  // The answer was read before the pin: the pin stays.
  assert.deepEqual(ids(loadedPins([], [a])), ["msg_1"]);
  // ... before the unpin: the unpin stays.
  assert.deepEqual(ids(loadedPins([a, b], [{ id: "msg_1" }])), ["msg_2"]);
  // ... after both: the same list, newest pin first.
  assert.deepEqual(ids(loadedPins([b, a], [a, b])), ["msg_2", "msg_1"]);
  // Heard in order: pinned then unpinned is unpinned.
  assert.deepEqual(ids(loadedPins([], [a, { id: "msg_1" }])), []);
  assert.deepEqual(ids(loadedPins([a], [])), ["msg_1"]);
});
