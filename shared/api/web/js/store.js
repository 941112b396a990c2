// The room page's state that its modules share, in one place: each reads
// it with get() and changes it with set(), and none keeps a copy. What
// only one module needs (a timer, an element it drew, a search under way)
// stays in that module.

import { initialState } from "./reducer.js";

// createStore holds state, starting as initial. set(patch) answers the
// new state: initial with the fields of patch replaced, the rest kept.
export function createStore(initial) {
  let state = Object.freeze({ ...initial });
  return {
    get: () => state,
    set(patch) {
      state = Object.freeze({ ...state, ...patch });
      return state;
    },
  };
}

// pageState is the room page's state before the room is opened.
export function pageState(roomId, path) {
  return {
    roomId,             // the room's id, as the server names it once opened
    path,               // roomId as used in API paths (api.js enc)
    stopped: false,     // a gate or a fatal error ended the page: nothing polls
    opened: false,      // the room was read (GET …/info)
    admin: false,       // the reader administers the room
    account: null,      // the signed-in account, who posts as themselves
    panelOn: false,     // the side panel refreshes
    live: initialState(), // what live events change (reducer.js): the board, reasoning, the agents
    msgs: new Map(),    // id → every message loaded
    lastNum: 0,         // highest message number loaded
    oldestNum: Infinity, // lowest message number loaded
    hasOlder: false,    // whether messages before oldestNum exist
    historyLoaded: false,
    agentsByLabel: new Map(), // lower-cased actor label → participant of agents
    displayName: "",    // the room's display name as shown (its codename, or an admin's name)
    repoHost: "",       // the host of the room's repository ("" when it has none): GitHub links may go there
    github: new Map(),  // ghe_N → the room's GitHub events known (ghevents.js)
  };
}
