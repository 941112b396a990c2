// Unit tests of web/js/avatar.js: a sender's colour.
import { test } from "node:test";
import assert from "node:assert/strict";
import { avatarColour } from "../web/js/avatar.js";

test("a name always has the same colour, one of eight", () => {
  for (const name of ["ada", "Builder | ada's agent | Codex", "", "名前", "😀 bot"]) {
    const c = avatarColour(name);
    assert.equal(c, avatarColour(name));
    assert.ok(Number.isInteger(c) && c >= 0 && c < 8, `${name}: ${c}`);
  }
});

test("names spread over the palette", () => {
  const used = new Set(["ada", "bob", "carol", "dave", "eve", "frank", "grace", "heidi", "ivan", "judy", "mallory", "oscar"].map(avatarColour));
  assert.ok(used.size >= 5, `12 names use ${used.size} colours`);
});
