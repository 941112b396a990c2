// The official MCP TypeScript SDK's OAuth client against the hosted
// endpoint (mcp/server TestHostedOAuthTypeScriptClient): node
// oauth-client.mjs URL ROOM. Its first connection is refused (401); the
// SDK then finds the authorization server from the resource metadata,
// registers itself, and sends the "browser" (played here with fetch:
// the fake GitHub's sign-in, then the consent page's Allow) to authorize;
// with the code it gets tokens and connects, lists the tools, joins ROOM
// and sends a message. It prints one JSON line with its access token, and
// waits for a line on stdin (the test moves its clock past the token's
// life); then one more call, which the SDK retries after refreshing,
// and a last JSON line of what it saw.
import readline from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const [url, room] = process.argv.slice(2);
const service = new URL(url).origin;
const redirectUrl = "http://127.0.0.1:9/callback"; // never reached: the browser stops there
const stdin = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const state = "st-" + Math.random().toString(36).slice(2);
const cookies = new Map();
let clientInfo, tokens, verifier, code;

// browse follows a browser's redirects from target, with its cookies for
// the service, allowing the consent page, until the client's redirect.
async function browse(target) {
	let u = new URL(target);
	for (let hops = 0; hops < 10; hops++) {
		if (u.href.startsWith(redirectUrl)) return u;
		const headers = {};
		if (u.origin === service && cookies.size) headers.cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join("; ");
		const res = await fetch(u, { redirect: "manual", headers });
		if (u.origin === service) {
			for (const c of res.headers.getSetCookie()) {
				const [k, v] = c.split(";")[0].split("=");
				v ? cookies.set(k, v) : cookies.delete(k);
			}
		}
		if (res.status === 302) {
			u = new URL(res.headers.get("location"), u);
			continue;
		}
		const page = await res.text();
		if (res.status !== 200) throw new Error(`${u.pathname} answered ${res.status}: ${page}`);
		const field = (name) => page.match(new RegExp(`name="${name}" value="([^"]+)"`))[1];
		u = new URL(`/oauth/decide?request=${field("request")}&consent=${field("consent")}&decision=allow`, u);
	}
	throw new Error("too many redirects");
}

const provider = {
	get redirectUrl() {
		return redirectUrl;
	},
	get clientMetadata() {
		return { client_name: "TypeScript SDK test", redirect_uris: [redirectUrl], grant_types: ["authorization_code", "refresh_token"],
			response_types: ["code"], token_endpoint_auth_method: "none" };
	},
	state: () => state,
	clientInformation: () => clientInfo,
	saveClientInformation: (info) => {
		clientInfo = info;
	},
	tokens: () => tokens,
	saveTokens: (t) => {
		tokens = t;
	},
	redirectToAuthorization: async (authorizationUrl) => {
		const back = await browse(authorizationUrl);
		if (back.searchParams.get("state") !== state) throw new Error(`state not passed back: ${back}`);
		code = back.searchParams.get("code");
	},
	saveCodeVerifier: (v) => {
		verifier = v;
	},
	codeVerifier: () => verifier,
};

const body = (r) => {
	if (r.isError) throw new Error(r.content[0].text);
	return JSON.parse(r.content[0].text);
};
const client = new Client({ name: "letagents-oauth-test", version: "1" });
let transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
try {
	await client.connect(transport);
	throw new Error("connected without signing in");
} catch (e) {
	if (!(e instanceof UnauthorizedError)) throw e;
}
await transport.finishAuth(code);
transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
await client.connect(transport);
const session = transport.sessionId;
const { tools } = await client.listTools();
const joined = body(await client.callTool({ name: "join_room", arguments: { name: room } }));
body(await client.callTool({ name: "send_message", arguments: { text: "hello after OAuth" } }));
const first = tokens.access_token;
console.log(JSON.stringify({ access: first }));
await stdin.next();
const again = body(await client.callTool({ name: "get_current_room", arguments: {} }));
console.log(JSON.stringify({ session, sessionAfter: transport.sessionId, client: clientInfo.client_id, tools: tools.map((t) => t.name),
	room: joined.room_id, roomAfter: again.room_id, refreshed: tokens.access_token !== first }));
await client.close();
process.exit(0);
