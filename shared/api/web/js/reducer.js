// How live events change the room page's state: the one place an event
// from the stream (or a message from the long-poll) is understood. The
// reducer is pure: it answers the new state and what the page must do
// (draw the board, reload a list); room.js does it.

import * as ev from "./events.js";
import { OPEN_STATUSES, lc, numOf } from "./view.js";

// initialState is the live state before anything is loaded: the board is
// null until its first load, the reasoning sessions by id, the room's
// people and agents (GET …/participants) as last loaded. taskEvents and
// presenceEvents count the events that changed the board and the agents,
// so that a load that may predate one is read again rather than shown.
export function initialState() {
  return { board: null, reasoning: new Map(), taskEvents: 0, agents: { list: [], hidden: 0 }, presenceEvents: 0 };
}

// reduce applies one event of type with its JSON data to state. It
// answers { state, messages, draw, refresh }: messages to add to the
// chat, draw the parts to draw again ("board", "agents", "room": its
// name, state.displayName), refresh the
// lists to reload from the server ("agents", "board"). Unknown events
// change nothing.
export function reduce(state, type, data) {
  const out = { state, messages: [], draw: new Set(), refresh: new Set() };
  switch (type) {
    case ev.MESSAGE:
      if (data && typeof data === "object") out.messages.push(data);
      break;
    case ev.TASK_UPDATE: {
      out.refresh.add("agents");
      if (!data || typeof data !== "object" || typeof data.id !== "string") break;
      out.state = { ...state, taskEvents: state.taskEvents + 1 };
      if (!state.board) { out.refresh.add("board"); break; }
      out.state.board = applyTask(state.board, data);
      out.draw.add("board");
      break;
    }
    case ev.REASONING_UPDATE: {
      out.refresh.add("agents");
      const s = data && typeof data === "object" ? data.session || data : null;
      const reasoning = upsertReasoning(state.reasoning, s);
      if (reasoning !== state.reasoning) { out.state = { ...state, reasoning }; out.draw.add("agents"); }
      break;
    }
    case ev.REASONING_REMOVE: {
      out.refresh.add("agents");
      const id = data && (data.session_id || data.id);
      if (typeof id === "string" && state.reasoning.has(id)) {
        const reasoning = new Map(state.reasoning);
        reasoning.delete(id);
        out.state = { ...state, reasoning };
        out.draw.add("agents");
      }
      break;
    }
    case ev.PRESENCE_UPDATE:
    case ev.PRESENCE_REMOVE: {
      const agents = applyPresence(state.agents, type, data);
      if (agents === state.agents) break;
      out.state = { ...state, agents, presenceEvents: state.presenceEvents + 1 };
      out.draw.add("agents");
      break;
    }
    case ev.ROOM_UPDATE:
      if (!data || typeof data !== "object" || typeof data.display_name !== "string") break;
      out.state = { ...state, displayName: data.display_name };
      out.draw.add("room");
      break;
  }
  return out;
}

// applyTask is board with task t as it now is: in its place, added, or
// gone once closed (unless closed tasks are shown).
export function applyTask(board, t) {
  const tasks = board.tasks.slice();
  const i = tasks.findIndex((x) => x.id === t.id);
  const keep = board.all || OPEN_STATUSES.includes(t.status);
  if (i >= 0 && keep) tasks[i] = t;
  else if (i >= 0) tasks.splice(i, 1);
  else if (keep) tasks.push(t);
  return { ...board, tasks };
}

// applyPresence is agents (the participants list, { list, hidden }) with
// a worker's roster change applied in place: a presence_update (its GET
// …/presence entry) updates its entry, found by session or label, or adds
// it first, as the newest seen; a presence_remove drops it, or keeps an
// agent that posted in the room as a sender with no session, as a reload
// would show it. It answers agents itself when data is not one. Whether
// an agent is reached now comes the same way: the server logs a presence
// event when a worker starts waiting, and its liveness sweeper one when a
// worker's wait or hooks lapsed.
export function applyPresence(agents, type, data) {
  if (!data || typeof data !== "object" || typeof data.agent_session_id !== "string" || typeof data.actor_label !== "string") return agents;
  const list = agents.list.slice();
  const i = list.findIndex((p) => p && p.kind !== "human" && (p.session_id === data.agent_session_id || lc(p.actor_label) === lc(data.actor_label)));
  if (type === ev.PRESENCE_REMOVE) {
    if (i < 0) return agents;
    const p = list[i];
    const posted = Array.isArray(p.source_flags) && p.source_flags.includes("messages");
    if (posted) {
      list[i] = { ...p, session_id: null, status: null, status_text: null, native_activity: null, connected: false, reached_by: undefined,
        activity_state: "offline", source_flags: ["messages"] };
    } else {
      list.splice(i, 1);
    }
    return { ...agents, list };
  }
  const flags = Array.isArray(data.source_flags) ? data.source_flags : [];
  const entry = {
    kind: "agent", session_id: data.agent_session_id, actor_label: data.actor_label, display_name: data.display_name,
    owner_label: data.owner_label, ide_label: data.ide_label, agent_key: data.agent_key, session_kind: data.session_kind, runtime: data.runtime,
    // The roster says idle for a worker that never said; the list, nothing.
    status: flags.includes("presence") ? data.status : "", status_text: data.status_text ?? null,
    native_activity: data.native_activity ?? null, activity_state: data.activity_state, reached_by: data.reached_by,
    connected: data.reached_by === "live",
  };
  if (i >= 0) list[i] = { ...list[i], ...entry };
  else list.unshift({ ...entry, source_flags: flags });
  return { ...agents, list };
}

// upsertReasoning is sessions with s as it now is: kept while open,
// dropped once closed. It answers sessions itself when s is not one.
export function upsertReasoning(sessions, s) {
  if (!s || typeof s !== "object" || typeof s.id !== "string") return sessions;
  const next = new Map(sessions);
  if (s.closed_at) next.delete(s.id);
  else next.set(s.id, s);
  return next;
}

// newer is the messages of list numbered above after and not in known
// (a Map or Set by id), without repeats, in id order.
export function newer(list, after, known) {
  return pick(list, (n) => n > after, known);
}

// older is the messages of list numbered below before and not in known,
// without repeats, in id order.
export function older(list, before, known) {
  return pick(list, (n) => n < before, known);
}

function pick(list, want, known) {
  if (!Array.isArray(list)) return [];
  const seen = new Set();
  const out = [];
  for (const m of list) {
    if (!m || typeof m !== "object") continue;
    const n = numOf(m.id);
    if (!Number.isFinite(n) || !want(n) || known.has(m.id) || seen.has(m.id)) continue;
    seen.add(m.id);
    out.push(m);
  }
  return out.sort((a, b) => numOf(a.id) - numOf(b.id));
}

// DEFAULT_HEARTBEAT is how often a server sends heartbeats when it does
// not say (letagents.StreamHeartbeat).
export const DEFAULT_HEARTBEAT = 15000;

// silenceLimit is how long a stream whose heartbeat data is hb may stay
// silent before the page counts it dead: two heartbeats missed, and some
// slack for a slow network.
export function silenceLimit(hb) {
  const every = Number(hb && hb.every_ms);
  return (every > 0 ? every : DEFAULT_HEARTBEAT) * 2 + 5000;
}
