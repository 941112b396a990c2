// Signing in and out with GitHub, for both pages: each shows a refusal
// in msgEl, next to the button that asked.

import { api, errText, jsonPost } from "./api.js";
import { flash } from "./dom.js";

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
export function sameOrigin(u) {
  try { return new URL(u, location.href).origin === location.origin; } catch { return false; }
}
