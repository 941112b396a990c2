// A sender's avatar: the name's initial on one of eight colours (ui.css's
// .av-0 to .av-7, each readable in both themes), the same name always the
// same colour, so a reader tells senders apart at a glance.

import { el } from "./dom.js";

// avatarColour is the palette index of name: a string hash, not a secret.
export function avatarColour(name) {
  let h = 0;
  for (const c of String(name)) h = (h * 31 + c.codePointAt(0)) >>> 0;
  return h % 8;
}

// avatar is the element for name, hidden from assistive technology: the
// name is written beside it.
export function avatar(name, cls = "") {
  const n = String(name || "?").trim() || "?";
  const a = el("span", `avatar av-${avatarColour(n)}${cls ? " " + cls : ""}`, [...n][0]);
  a.setAttribute("aria-hidden", "true");
  return a;
}
