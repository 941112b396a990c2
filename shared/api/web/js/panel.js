// The side panel's lists (agents, board, pending intents) reload from the
// server on events (on a timer only while the page long-polls, room.js);
// these keep those reloads few and the redraws to what changed. The
// panel is extra: its failures show inline and never touch the chat.

// PANEL_EVERY is the reload of each list while the page long-polls, and
// the wait after a failure; PANEL_GAP the least wait between reloads
// after a success, so that events show within a second.
export const PANEL_EVERY = 15000;
const PANEL_GAP = 500;

// refresher wraps a list's load (which answers whether it worked): one
// run at a time, requests in between fold into one, and runs keep
// PANEL_GAP apart (PANEL_EVERY after a failure) unless asked for now.
// Nothing runs while the page is hidden, stopped, or before its panel
// is on (page: the store, store.js).
export function refresher(load, page) {
  let timer = 0, busy = false, again = false, next = 0;
  async function go() {
    timer = 0;
    const { stopped, panelOn } = page.get();
    if (stopped || !panelOn || document.visibilityState !== "visible") return;
    if (busy) { again = true; return; }
    busy = true;
    let ok = false;
    try { ok = await load(); } catch { ok = false; }
    busy = false;
    next = Date.now() + (ok ? PANEL_GAP : PANEL_EVERY);
    if (again) { again = false; request(); }
  }
  function request(now) {
    if (page.get().stopped || (timer && !now)) return;
    clearTimeout(timer);
    timer = setTimeout(go, now ? 0 : Math.max(0, next - Date.now()));
  }
  return request;
}

// changes answers a check of whether data differs from what was last
// drawn (and notes it as drawn); its forget() makes the next check
// answer true, for a redraw whatever the data.
export function changes() {
  let drawn;
  const changed = (data) => {
    const key = JSON.stringify(data);
    if (key === drawn) return false;
    drawn = key;
    return true;
  };
  changed.forget = () => { drawn = undefined; };
  return changed;
}
