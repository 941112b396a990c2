// Unit tests of web/js/composer.js: what Send does, and that a retry
// reuses the message's id.
import { test } from "node:test";
import assert from "node:assert/strict";
import { NEED_NAME, SEND_FAILED, composerState, edited, failed, sent, submit } from "../web/js/composer.js";

const ids = () => { let n = 0; return () => "cid-" + ++n; };

test("submit decides what Send does", () => {
  const cases = [
    { name: "nothing to send", text: "  \n", sender: "ann", want: "focus-text" },
    { name: "no name", text: "hi", sender: "", want: "need-name", error: NEED_NAME },
    { name: "a message", text: "hi", sender: "ann", want: "send", body: { sender: "ann", text: "hi", client_message_id: "cid-1" } },
    { name: "a reply", text: "hi", sender: "ann", parent: "msg_4", want: "send",
      body: { sender: "ann", text: "hi", client_message_id: "cid-1", thread_parent_id: "msg_4" } },
  ];
  for (const c of cases) {
    const r = submit(composerState(), { text: c.text, sender: c.sender, parent: c.parent || "", newId: ids() });
    assert.equal(r.action, c.want, c.name);
    assert.equal(r.error, c.error, c.name);
    assert.deepEqual(r.body, c.body, c.name);
    assert.equal(r.state.sending, c.want === "send", c.name);
  }
});

test("a second Send while one is under way does nothing", () => {
  const first = submit(composerState(), { text: "hi", sender: "ann", newId: ids() });
  assert.equal(submit(first.state, { text: "hi", sender: "ann", newId: ids() }).action, "none");
});

test("a retry after a failure is the same message; an edit or a success is a new one", () => {
  const newId = ids();
  const first = submit(composerState(), { text: "hi", sender: "ann", newId });
  const f = failed(first.state, "");
  assert.equal(f.error, SEND_FAILED);
  assert.equal(failed(first.state, "Room is read-only").error, "Room is read-only");
  const retry = submit(f.state, { text: "hi", sender: "ann", newId });
  assert.equal(retry.body.client_message_id, first.body.client_message_id);
  const afterEdit = submit(edited(f.state), { text: "hi!", sender: "ann", newId });
  assert.notEqual(afterEdit.body.client_message_id, first.body.client_message_id);
  const next = submit(sent(retry.state), { text: "again", sender: "ann", newId });
  assert.notEqual(next.body.client_message_id, retry.body.client_message_id);
});
