// The room's GitHub events as the page knows them (the store's github,
// ghe_N → event): from the stream's github_event, and from GET …/events
// for the lines drawn before their event was known (the history, older
// pages, the long-poll, which carries messages alone). A status line that
// announces an event (its github_event_id) is drawn as that event's card
// (message.js); one whose event is not known yet is drawn as a line, then
// redrawn as the card once its event is loaded (shown(ids)). A line whose
// event is gone (past its retention, docs/limits.md) stays a line.

import { api } from "./api.js";

const PAGE = 100;     // events per request, the server's most
const MAX_PAGES = 5;  // per load: an event further back leaves its line a line

const num = (id) => {
  const m = /^ghe_(\d+)$/.exec(String(id));
  return m ? Number(m[1]) : NaN;
};

// githubEvents keeps the events in page (the store); shown(ids) is told
// the events just loaded for lines drawn before.
export function githubEvents({ page, shown }) {
  const wanted = new Set();  // named by a drawn line, not known yet
  const missing = new Set(); // looked for and not listed: their lines stay lines
  let loading = null;

  const known = (id) => page.get().github.get(id);

  // add takes an event of the stream; a line drawn before it is redrawn.
  function add(ev) {
    if (!ev || typeof ev !== "object" || !Number.isFinite(num(ev.id))) return;
    page.get().github.set(ev.id, ev);
    missing.delete(ev.id);
    if (wanted.delete(ev.id)) shown([ev.id]);
  }

  // need asks for event id, named by a line just drawn; the lines drawn
  // together make one load.
  function need(id) {
    if (!Number.isFinite(num(id)) || known(id) || missing.has(id) || wanted.has(id)) return;
    wanted.add(id);
    if (!loading) loading = Promise.resolve().then(load).finally(() => { loading = null; });
  }

  // load reads the room's events newest first from just above the newest
  // wanted one, until every wanted one is found or none is older.
  async function load() {
    while (wanted.size) {
      const batch = new Set(wanted);
      const found = [];
      let after = Math.max(...[...batch].map(num)) + 1;
      try {
        for (let i = 0; i < MAX_PAGES && [...batch].some((id) => !known(id)); i++) {
          const body = await api(`/rooms/${page.get().path}/events?limit=${PAGE}&after=ghe_${after}`, {}, 30000);
          const evs = body && Array.isArray(body.events) ? body.events : [];
          for (const ev of evs) {
            if (!ev || !Number.isFinite(num(ev.id))) continue;
            page.get().github.set(ev.id, ev);
            if (batch.has(ev.id)) found.push(ev.id);
          }
          if (!body || !body.has_more || !evs.length) break;
          after = num(evs[evs.length - 1].id);
        }
      } catch { /* the lines stay lines; a reload asks again */ }
      for (const id of batch) {
        wanted.delete(id);
        if (!known(id)) missing.add(id);
      }
      if (found.length) shown(found);
    }
  }

  return { get: known, add, need };
}
