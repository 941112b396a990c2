// Signing in and out with GitHub, for both pages: each shows a refusal
// in msgEl, next to the button that asked.

import { api, errText, jsonPost } from "./api.js";
import { button, el, flash } from "./dom.js";

// signIn asks the server where GitHub's sign-in starts and goes there,
// back to this page afterwards.
export async function signIn(btn, msgEl) {
  btn.disabled = true;
  try {
    const r = await api("/auth/github/login", jsonPost("POST", { redirect_to: location.pathname + location.search }), 30000);
    const url = r && typeof r.auth_url === "string" ? new URL(r.auth_url, location.href) : null;
    if (url && /^https?:$/.test(url.protocol)) { location.href = url.href; return; }
    flash(msgEl, "Unexpected response from server.");
  } catch (err) { flash(msgEl, errText(err)); }
  btn.disabled = false;
}

// signOut ends the browser's session and reloads the page.
export async function signOut(btn, msgEl) {
  btn.disabled = true;
  try { await api("/auth/logout", jsonPost("POST", {}), 30000); location.reload(); return; }
  catch (err) { flash(msgEl, errText(err)); }
  btn.disabled = false;
}

// sameOrigin tells an avatar the pages may show: the CSP blocks images
// of other origins.
function sameOrigin(u) {
  try { return new URL(u, location.href).origin === location.origin; } catch { return false; }
}

// accountNodes are what a page's header says of who acts here: that
// everyone is the local owner (local), or the account signed in with
// Sign out, or Sign in where the server has sign-in (configured), else
// noSignIn. The buttons are of class cls and show a refusal in msgEl.
export function accountNodes({ account, configured, local }, { msgEl, cls, noSignIn }) {
  if (local) {
    // No one signs in or out: whoever uses this server is its owner.
    return [el("span", "", "Sign-in is off: everyone here acts as the local owner.")];
  }
  if (!account) {
    return [configured ? button("Sign in with GitHub", (b) => signIn(b, msgEl), cls) : el("span", "", noSignIn)];
  }
  const nodes = [];
  const login = String(account.login || "");
  if (account.avatar_url && sameOrigin(account.avatar_url)) {
    const img = el("img");
    img.src = account.avatar_url;
    img.alt = ""; // the name is beside it
    img.width = img.height = 20;
    nodes.push(img);
  }
  nodes.push(el("span", "", account.display_name ? `${account.display_name} (${login})` : login));
  nodes.push(button("Sign out", (b) => signOut(b, msgEl), cls));
  return nodes;
}
