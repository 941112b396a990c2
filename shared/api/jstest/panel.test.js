// Unit tests of web/js/panel.js: redraws of the side panel's lists.
import { test } from "node:test";
import assert from "node:assert/strict";
import { changes } from "../web/js/panel.js";

test("changes tells data that differs from what was drawn", () => {
  const changed = changes();
  const steps = [
    [{ tasks: [1] }, true, "the first draw"],
    [{ tasks: [1] }, false, "the same data"],
    [{ tasks: [1, 2] }, true, "a task more"],
    [{ tasks: [1, 2] }, false, "the same again"],
  ];
  for (const [data, want, what] of steps) assert.equal(changed(data), want, what);
  changed.forget();
  assert.equal(changed({ tasks: [1, 2] }), true, "after forget, the same data draws");
  assert.equal(changes()({ tasks: [1, 2] }), true, "each list its own memory");
});
