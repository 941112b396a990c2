// The landing page: the MCP configuration to copy, opening or creating a
// room, and the GitHub account. A module of its own, as the room page's
// are, so that no page needs an inline script.

import { api, enc, errText, jsonPost } from "./api.js";
import { sameOrigin, signIn, signOut } from "./auth.js";
import { $, button, copyText, el } from "./dom.js";

// The MCP configuration with this page's origin filled in.
const config = JSON.stringify({
  mcpServers: { letagents: { command: "letagents", env: { LETAGENTS_API_URL: location.origin } } },
}, null, 2);
$("mcp-config").textContent = config;

const copyBtn = $("copy-btn");
let copyTimer = 0;
copyBtn.addEventListener("click", async () => {
  let label;
  try { await copyText(config); label = "Copied"; }
  catch { label = "Copy failed"; }
  copyBtn.textContent = label;
  $("copy-status").textContent = label === "Copied" ? "Configuration copied to clipboard" : "Could not copy; select the text manually";
  clearTimeout(copyTimer);
  copyTimer = setTimeout(() => { copyBtn.textContent = "Copy"; }, 1800);
});

const roomPath = (id) => "/in/" + enc(id);

// Open an existing room.
$("open-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const input = $("room-id");
  const id = input.value.trim().replace(/^\/+|\/+$/g, "");
  if (!id) {
    $("open-error").textContent = "Enter a room id or invite code.";
    input.focus();
    return;
  }
  $("open-error").textContent = "";
  location.href = roomPath(id);
});
$("room-id").addEventListener("input", () => { $("open-error").textContent = ""; });

// Create a new room with a fresh invite code.
const createBtn = $("create-btn");
createBtn.addEventListener("click", async () => {
  const errEl = $("create-error");
  errEl.textContent = "";
  createBtn.disabled = true;
  const oldLabel = createBtn.textContent;
  createBtn.textContent = "Creating…";
  try {
    const body = await api("/projects", jsonPost("POST", {}));
    if (body && typeof body.id === "string" && body.id) {
      location.href = roomPath(body.id);
      return;
    }
    errEl.textContent = "Unexpected response from server.";
  } catch (err) {
    errEl.textContent = errText(err);
  }
  createBtn.disabled = false;
  createBtn.textContent = oldLabel;
});

// ---- GitHub sign-in ------------------------------------------------------
const authMsg = el("span", "msg");
authMsg.setAttribute("role", "status");

// renderAuth shows the account, or the way to sign in where the server
// has sign-in set up (configured false: say why nobody signs in; local:
// that everyone acts as the local owner).
function renderAuth(acct, configured, local) {
  const nodes = [];
  if (local) {
    // No one signs in or out: whoever uses this server is its owner.
    nodes.push(el("span", "", "Sign-in is off: everyone here acts as the local owner."));
  } else if (acct) {
    const login = String(acct.login || "");
    if (acct.avatar_url && sameOrigin(acct.avatar_url)) {
      const img = el("img");
      img.src = acct.avatar_url;
      img.alt = login;
      img.width = img.height = 20;
      nodes.push(img);
    }
    nodes.push(el("span", "", acct.display_name ? `${acct.display_name} (${login})` : login));
    nodes.push(button("Sign out", (b) => signOut(b, authMsg), "small secondary"));
  } else if (configured === false) {
    nodes.push(el("span", "", "GitHub sign-in is not set up on this server."));
  } else {
    nodes.push(button("Sign in with GitHub", (b) => signIn(b, authMsg), "small secondary"));
  }
  $("auth").replaceChildren(...nodes, authMsg);
}

api("/auth/session")
  .then((s) => renderAuth(s && s.authenticated && s.account ? s.account : null, s && s.sign_in_configured, s && s.local_owner))
  .catch(() => { /* sign-in state unknown: leave the area empty */ });
