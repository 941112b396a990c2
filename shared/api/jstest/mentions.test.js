// Unit tests of web/js/mentions.js: @mentions in messages and the
// composers' autocomplete.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  MAX_SUGGESTIONS, applyMention, mentionName, mentionNames, mentionParts, mentionQuery, mentionToken, mentionsReader, readerKeys, suggestions,
} from "../web/js/mentions.js";

test("mentionName keys a display name as the server does", () => {
  const cases = [["Calm Otter", "calmotter"], ["ann.", "ann"], ["a_b-c", "a_b-c"], ["...", ""], ["Ünïcode", "ncode"], ["", ""], [null, ""]];
  for (const [name, want] of cases) assert.equal(mentionName(name), want, String(name));
});

test("mentionParts finds the mentions of a text", () => {
  const cases = [
    ["hi @Ann, and @bob.", [{ text: "hi " }, { text: "@Ann", key: "ann" }, { text: ", and " }, { text: "@bob", key: "bob" }, { text: "." }]],
    ["mail ann@example.com", [{ text: "mail ann@example.com" }]],
    ["`@ann` in code", [{ text: "`@ann` in code" }]],
    ["@[Builder | ann's agent |  Codex] go", [{ text: "@[Builder | ann's agent |  Codex]", key: "builder | ann's agent | codex" }, { text: " go" }]],
    ["@[never closed", [{ text: "@[never closed" }]],
    ["@@ann and @ alone", [{ text: "@@ann and @ alone" }]],
    ["@anné", [{ text: "@anné" }]],
    ["", []],
  ];
  for (const [text, want] of cases) assert.deepEqual(mentionParts(text), want, text);
});

test("readerKeys and mentionsReader: the reader's login and display name", () => {
  const keys = readerKeys({ login: "grace", display_name: "Grace Hopper" });
  assert.deepEqual([...keys].sort(), ["grace", "grace hopper", "gracehopper"]);
  assert.equal(mentionsReader("ping @Grace", keys), true);
  assert.equal(mentionsReader("ping @GraceHopper", keys), true);
  assert.equal(mentionsReader("ping @[Grace Hopper]", keys), true);
  assert.equal(mentionsReader("ping @gracie", keys), false);
  assert.equal(mentionsReader("grace@example.com", keys), false);
  assert.equal(mentionsReader("@grace", readerKeys(null)), false);
});

test("mentionQuery: the mention being typed at the caret", () => {
  const cases = [
    ["hi @an", 6, { start: 3, query: "an" }],
    ["@", 1, { start: 0, query: "" }],
    ["hi @an more", 6, { start: 3, query: "an" }],
    ["hi @an more", 11, null],
    ["ann@exa", 7, null],
    ["`@an", 4, null],
    ["a `b` @c", 8, { start: 6, query: "c" }],
    ["a `b @c", 7, null],
    ["@@x", 3, null],
  ];
  for (const [text, caret, want] of cases) assert.deepEqual(mentionQuery(text, caret), want, `${text}|${caret}`);
});

test("mentionToken: @Name when the server resolves it, else @[name]", () => {
  const cases = [["Builder", "@Builder"], ["Calm Otter", "@CalmOtter"], ["Zoë", "@[Zoë]"], ["a.b.", "@a.b"], ["!!", "@[!!]"]];
  for (const [name, want] of cases) assert.equal(mentionToken(name), want, name);
  for (const [name] of cases.slice(0, 2)) assert.equal(mentionParts(mentionToken(name))[0].key, mentionName(name), name);
});

test("suggestions: names starting with the query first, then a word of them", () => {
  const names = ["Reviewer", "Builder", "builder", "Calm Otter", "Otto", "", null, "Big Rob"];
  assert.deepEqual(suggestions(names, "b"), ["Builder", "Big Rob"]);
  assert.deepEqual(suggestions(names, "ot"), ["Otto", "Calm Otter"]);
  assert.deepEqual(suggestions(names, "calmo"), ["Calm Otter"]);
  assert.deepEqual(suggestions(names, "zz"), []);
  assert.deepEqual(suggestions(names, ""), ["Reviewer", "Builder", "Calm Otter", "Otto", "Big Rob"]);
  const many = Array.from({ length: 20 }, (_, i) => `agent${i}`);
  assert.equal(suggestions(many, "a").length, MAX_SUGGESTIONS);
});

test("mentionNames: the participants' display names, else their label's", () => {
  const list = [{ display_name: "Grace", kind: "human" }, { actor_label: "Builder | ann's agent | Codex", kind: "agent" }, null, { display_name: " " }];
  assert.deepEqual(mentionNames(list), ["Grace", "Builder"]);
  assert.deepEqual(mentionNames(undefined), []);
});

test("applyMention replaces what was typed with the token and a space", () => {
  assert.deepEqual(applyMention("hi @bu", 3, 6, "Builder"), { text: "hi @Builder ", caret: 12 });
  assert.deepEqual(applyMention("hi @bu there", 3, 6, "Builder"), { text: "hi @Builder there", caret: 12 });
  assert.deepEqual(applyMention("@b|ld x", 0, 2, "Calm Otter"), { text: "@CalmOtter |ld x", caret: 11 });
  assert.deepEqual(applyMention("@buil", 0, 3, "Builder"), { text: "@Builder ", caret: 9 });
});
