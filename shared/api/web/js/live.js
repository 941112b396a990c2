// How the room page follows its room: the event stream, the long-poll
// where the server cannot stream, and the waits between them after a
// failure. It knows the transports, not the page: room.js says what a
// connection is and what an event does.

import * as ev from "./events.js";
import { ApiError, api, retryDelay } from "./api.js";
import { silenceLimit } from "./reducer.js";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Waiting out an outage: a nap that a sign of the server's return (the
// browser back online, the tab shown again) cuts short.
let wakeNap = null;
export function nap(ms) {
  return new Promise((resolve) => {
    const done = () => { clearTimeout(timer); wakeNap = null; resolve(); };
    const timer = setTimeout(done, ms);
    wakeNap = done;
  });
}
const wake = () => { if (wakeNap) wakeNap(); };
window.addEventListener("online", wake);
document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") wake(); });

const PROBE_EVERY = 2000;

// untilBack waits up to ms after a failure, but no longer than it takes
// the server to answer its health check again: a server back up is used
// at once, not after the rest of a long backoff.
export async function untilBack(ms, isStopped) {
  const end = Date.now() + ms;
  while (!isStopped() && Date.now() < end) {
    await nap(Math.min(PROBE_EVERY, end - Date.now()));
    try {
      const h = await api("/api/health", { cache: "no-store" }, 5000);
      if (h && h.status === "ok") return;
    } catch { /* still down */ }
  }
}

// follow runs a transport until the page stops: connect(up) runs until
// it fails (up says it is live); after a failure follow waits (untilBack)
// and connects again, resuming after the last message loaded, so nothing
// is missed. gate(err) answers whether err ended the page; onBack runs
// when a connection is up again after a failure.
export async function follow(connect, { isStopped, gate, setStatus, onBack }) {
  let backoff = 1000;
  let down = false;
  const up = () => {
    setStatus("live", "live");
    backoff = 1000;
    if (down) { down = false; onBack(); }
  };
  while (!isStopped()) {
    try {
      await connect(up);
    } catch (err) {
      if (gate(err) || isStopped()) return;
      down = true;
      const wait = retryDelay(err, backoff);
      backoff = Math.min(backoff * 2, 30000);
      if (err instanceof ApiError && err.status < 500) {
        // The server is up and said no: wait the whole backoff.
        setStatus(`error: ${err.message} — retrying in ${Math.ceil(wait / 1000)}s…`, "retry");
        await nap(wait);
      } else {
        setStatus("reconnecting…", "retry");
        await untilBack(wait, isStopped);
      }
    }
  }
}

// eventStream follows the event stream at url, handing each event to
// onEvent(type, data). An EventSource shows no status code: a stream that
// fails before it opens answers false, and the caller long-polls instead
// (a server that is down fails that too, and follow waits for it); one
// that fails once open throws, for follow to reconnect when the server is
// back, with a new stream from the last message shown (the stream's own
// retry would not say "reconnecting" while the server is away).
// A stream can also die without ending (a proxy or a network that drops
// it silently): url asks for heartbeat events, which say how often they
// come, and a stream silent for longer than silenceLimit fails too. A
// server that sends none is never called dead.
export function eventStream(url, { isStopped, onEvent, onOpen }) {
  if (typeof EventSource !== "function") return Promise.resolve(false);
  return new Promise((resolve, reject) => {
    const es = new EventSource(url);
    let open = false;
    let limit = 0, watchdog = 0;
    const end = (why) => {
      es.close();
      clearTimeout(watchdog);
      if (isStopped()) resolve(true);
      else if (open) reject(new Error(why));
      else resolve(false);
    };
    const alive = () => {
      if (!limit) return;
      clearTimeout(watchdog);
      watchdog = setTimeout(() => end("the event stream went silent"), limit);
    };
    const handle = (type) => (e) => {
      if (isStopped()) { end(""); return; }
      let data;
      try { data = JSON.parse(e.data); } catch { alive(); return; }
      if (type === ev.HEARTBEAT) limit = silenceLimit(data);
      alive();
      onEvent(type, data);
    };
    es.onopen = () => { open = true; onOpen(); };
    es.onmessage = handle(ev.MESSAGE);
    for (const type of ev.EVENTS) if (type !== ev.MESSAGE) es.addEventListener(type, handle(type));
    es.onerror = () => end("the event stream ended");
  });
}

const POLL_WAIT = 25000;

// longPoll asks url(wait) for the messages after the last one, again and
// again, handing each to onEvent; onAnswer runs at each answer. It
// returns at the first answer from until on (a time, in ms), and no poll
// waits past it: the caller then tries the stream again.
export async function longPoll(url, { isStopped, onEvent, onAnswer, until = Infinity }) {
  // The first poll answers at once (timeout=0): after an outage it
  // catches up and shows the page live, rather than the status saying
  // "reconnecting" while a poll of a quiet room waits out its timeout.
  let wait = 0;
  for (;;) {
    if (isStopped()) return;
    const started = Date.now();
    const body = await api(url(wait), {}, 45000);
    onAnswer();
    const list = (body && Array.isArray(body.messages)) ? body.messages : [];
    for (const m of list) onEvent(ev.MESSAGE, m);
    if (Date.now() >= until) return;
    // Guard against a server that answers an empty poll at once (as a
    // draining one does).
    if (wait && !list.length && Date.now() - started < 1000) await sleep(1000);
    wait = Math.max(1000, Math.min(POLL_WAIT, until - Date.now()));
  }
}
