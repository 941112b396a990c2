// The landing page: each client's MCP set-up to copy, opening or
// creating a room, and the GitHub account. A module of its own, as the room page's
// are, so that no page needs an inline script.

import { api, enc, errText, jsonPost } from "./api.js";
import { accountNodes } from "./auth.js";
import { $, copyText, el } from "./dom.js";

// Each client's set-up, with this page's origin filled in: Claude Code's
// command, and the file each of the others reads (docs/mcp.md).
const url = location.origin;
const json = JSON.stringify({ mcpServers: { letagents: { command: "letagents", env: { LETAGENTS_API_URL: url } } } }, null, 2);
const clients = {
  claude: { file: "In a terminal, once (add --scope project to share it through .mcp.json):", text: `claude mcp add letagents --env LETAGENTS_API_URL=${url} -- letagents` },
  codex: { file: "In ~/.codex/config.toml:", text: `[mcp_servers.letagents]\ncommand = "letagents"\nenv = { LETAGENTS_API_URL = "${url}" }` },
  cursor: { file: "In .cursor/mcp.json of the project (or ~/.cursor/mcp.json for every project):", text: json },
  gemini: { file: "In ~/.gemini/settings.json (or .gemini/settings.json of the project):", text: json },
};
// The same clients connected by URL to the hosted endpoint (docs/mcp.md),
// offered once the probe below finds one here.
const mcpURL = url + "/mcp";
const hostedJSON = (key) => JSON.stringify({ mcpServers: { letagents: { [key]: mcpURL, headers: { Authorization: "Bearer <owner token>" } } } }, null, 2);
const hosted = {
  claude: { file: "In a terminal, once:", text: `claude mcp add --transport http letagents ${mcpURL} --header "Authorization: Bearer $LETAGENTS_TOKEN"` },
  codex: { file: "In ~/.codex/config.toml (Codex reads the token from the variable named):", text: `[mcp_servers.letagents]\nurl = "${mcpURL}"\nbearer_token_env_var = "LETAGENTS_TOKEN"` },
  cursor: { file: "In .cursor/mcp.json:", text: hostedJSON("url") },
  gemini: { file: "In ~/.gemini/settings.json:", text: hostedJSON("httpUrl") },
};
const clientTabs = [...document.querySelectorAll("[data-client]")];
function showClient(name) {
  for (const t of clientTabs) t.setAttribute("aria-selected", String(t.dataset.client === name));
  $("client-panel").setAttribute("aria-labelledby", "tab-" + name);
  $("client-file").textContent = clients[name].file;
  $("mcp-config").textContent = clients[name].text;
  $("hosted-file").textContent = hosted[name].file;
  $("hosted-config").textContent = hosted[name].text;
}
$("hosted-url").textContent = mcpURL;
// Whether this origin serves /mcp: a sessionless request, which changes
// nothing and which an MCP server answers in JSON-RPC, if only with an
// error, or, where it wants a sign-in first (LETAGENTS_MCP_AUTH=required),
// with a 401 that points to its OAuth metadata. Where nothing serves MCP
// (a Lambda-only origin) the path is a 404 of another shape, and the
// section stays hidden. data-probed says the answer is in.
fetch(mcpURL, { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream",
  "MCP-Protocol-Version": "2026-07-28" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) })
  .then(async (r) => {
    if (r.status === 401 && /resource_metadata=/.test(r.headers.get("WWW-Authenticate") || "")) return true;
    const b = await r.json();
    return !!(b && b.jsonrpc === "2.0");
  })
  .catch(() => false)
  .then((served) => {
    $("hosted").hidden = !served;
    $("hosted").dataset.probed = "true";
  });
for (const t of clientTabs) t.addEventListener("click", () => showClient(t.dataset.client));
showClient("claude");

// Copy buttons copy the text of the element they name (data-copy).
const copyTimers = new Map();
for (const b of document.querySelectorAll("[data-copy]")) {
  b.addEventListener("click", async () => {
    let label;
    try { await copyText($(b.dataset.copy).textContent); label = "Copied"; }
    catch { label = "Copy failed"; }
    b.textContent = label;
    $("copy-status").textContent = label === "Copied" ? "Copied to the clipboard" : "Could not copy; select the text manually";
    clearTimeout(copyTimers.get(b));
    copyTimers.set(b, setTimeout(() => { b.textContent = "Copy"; }, 1800));
  });
}

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
    $("auth").replaceChildren(...accountNodes(session, { msgEl: authMsg, cls: "small", noSignIn: "GitHub sign-in is not set up on this server." }), authMsg);
  })
  .catch(() => { /* sign-in state unknown: leave the area empty */ });
