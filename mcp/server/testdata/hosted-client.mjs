// The official MCP TypeScript SDK's client against the hosted endpoint
// (mcp/server TestHostedTypeScriptClient): node hosted-client.mjs URL ROOM
// TEXT. It lists the tools, joins ROOM, sends TEXT, then waits for the
// next message with a progress token: it prints "parked" at the wait's
// first progress notification, and at the end one JSON line of what it
// saw. It ends its session with DELETE.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, room, text] = process.argv.slice(2);
const client = new Client({ name: "letagents-ts-sdk-test", version: "1" });
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
const session = transport.sessionId;
const body = (r) => {
	if (r.isError) throw new Error(r.content[0].text);
	return JSON.parse(r.content[0].text);
};
const { tools } = await client.listTools();
const joined = body(await client.callTool({ name: "join_room", arguments: { name: room } }));
const sent = body(await client.callTool({ name: "send_message", arguments: { text } }));
let parked = false;
const woken = body(await client.callTool(
	{ name: "wait_for_messages", arguments: { after_message_id: sent.id, timeout: 50000 } },
	undefined,
	{
		timeout: 120000,
		resetTimeoutOnProgress: true,
		onprogress: () => {
			if (!parked) {
				parked = true;
				console.log("parked");
			}
		},
	},
));
await transport.terminateSession();
await client.close();
console.log(JSON.stringify({ session, protocol: transport.protocolVersion, tools: tools.map((t) => t.name), room: joined.room_id,
	woken: woken.messages.map((m) => m.text) }));
