// Unit tests of web/js/store.js: the room page's shared state.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createStore, pageState } from "../web/js/store.js";

test("set replaces the fields it names and keeps the rest", () => {
  const s = createStore({ a: 1, b: 2 });
  const before = s.get();
  assert.deepEqual(s.set({ b: 3 }), { a: 1, b: 3 });
  assert.deepEqual(s.get(), { a: 1, b: 3 });
  assert.deepEqual(before, { a: 1, b: 2 }, "an earlier state does not change");
  assert.throws(() => { "use strict"; s.get().a = 9; }, TypeError, "the state is changed only through set");
});

test("pageState starts with nothing loaded", () => {
  const p = pageState("team", "team");
  assert.equal(p.roomId, "team");
  assert.equal(p.lastNum, 0);
  assert.equal(p.oldestNum, Infinity);
  assert.equal(p.live.board, null);
  assert.equal(p.msgs.size, 0);
  assert.notEqual(pageState("x", "x").msgs, p.msgs, "each page its own messages");
});
