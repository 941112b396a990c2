// The state of a message composer (the room's, a thread's): what a press
// of Send does, and the client_message_id a retry reuses, so that trying
// again after a failed send cannot post the message twice. Pure: room.js
// wires it to the form.

// NEED_NAME is what a composer says to a person with no posting name.
export const NEED_NAME = "Enter the name you post under (kept in this browser).";

// SEND_FAILED is what it says when the server could not be reached.
export const SEND_FAILED = "Could not send: network error. Your message was kept; try again.";

// composerState is a composer with nothing sent yet.
export function composerState() {
  return { cid: "", sending: false };
}

// edited is s after the text changed: a new text is a new message, with
// a new id.
export function edited(s) {
  return { ...s, cid: "" };
}

// submit answers what a press of Send does with text, posted as sender
// (in the thread of parent, "" for none); newId makes a message id. Its
// action is "none" (a send is under way), "focus-text" (nothing to send),
// "need-name" (with error) or "send" (with the request body).
export function submit(s, { text, sender, parent, newId }) {
  if (s.sending) return { state: s, action: "none" };
  if (!String(text || "").trim()) return { state: s, action: "focus-text" };
  if (!sender) return { state: s, action: "need-name", error: NEED_NAME };
  const cid = s.cid || newId();
  const body = { sender, text, client_message_id: cid };
  if (parent) body.thread_parent_id = parent;
  return { state: { cid, sending: true }, action: "send", body };
}

// sent is s once the server took the message: the next is a new one.
export function sent() {
  return composerState();
}

// failed is s once a send failed: the text and its id are kept, so that
// trying again is the same message. error is the server's answer ("" for
// a network failure); failed answers the line to show.
export function failed(s, error) {
  return { state: { ...s, sending: false }, error: error || SEND_FAILED };
}
