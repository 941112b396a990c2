// Small DOM helpers of the room page, holding no page state.

// store is localStorage, or nothing where the browser refuses it.
export const store = {
  get(k) { try { return localStorage.getItem(k); } catch { return null; } },
  set(k, v) { try { if (v == null) localStorage.removeItem(k); else localStorage.setItem(k, v); } catch { /* storage unavailable */ } },
};

// $ is the element of the page with id.
export const $ = (id) => document.getElementById(id);

// el makes an element of tag with class cls and text.
export function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

// button makes a button that calls onClick with itself.
export function button(label, onClick, cls) {
  const b = el("button", cls, label);
  b.type = "button";
  b.addEventListener("click", () => onClick(b));
  return b;
}

// copyText puts text on the clipboard, also where the Clipboard API is
// not there (an http page other than localhost).
export async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  const ta = document.createElement("textarea");
  ta.value = text;
  ta.style.position = "fixed";
  ta.style.opacity = "0";
  document.body.appendChild(ta);
  ta.select();
  const ok = document.execCommand("copy");
  ta.remove();
  if (!ok) throw new Error("copy failed");
}

const flashTimers = new Map();

// flash shows text in target for ms, then clears it.
export function flash(target, text, ms = 6000) {
  target.textContent = text;
  clearTimeout(flashTimers.get(target));
  flashTimers.set(target, setTimeout(() => { target.textContent = ""; }, ms));
}

// agentName draws an agent's label (view.js agentLabel): its name in
// strong, then its owner and client as badges, the whole label on hover.
export function agentName(l) {
  const name = el("strong", "", l.name);
  name.title = l.title;
  const out = [name];
  if (l.owner) out.push(" ", el("span", "badge owner", `${l.owner}'s`));
  if (l.client) out.push(" ", el("span", "badge client", l.client));
  return out;
}
