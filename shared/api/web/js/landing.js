// The landing page: the MCP configuration to copy, opening or creating a
// room, and the GitHub account. A module of its own, as the room page's
// are, so that no page needs an inline script.

import { api, enc, errText, jsonPost } from "./api.js";
import { accountNodes } from "./auth.js";
import { $, copyText, el } from "./dom.js";

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

api("/auth/session")
  .then((s) => {
    const session = { account: (s && s.authenticated && s.account) || null, configured: !(s && s.sign_in_configured === false), local: !!(s && s.local_owner) };
    $("auth").replaceChildren(...accountNodes(session, { msgEl: authMsg, cls: "small secondary", noSignIn: "GitHub sign-in is not set up on this server." }), authMsg);
  })
  .catch(() => { /* sign-in state unknown: leave the area empty */ });
