// The page's optional sound for new messages: off unless the reader
// turns it on (the choice kept in this browser), a short tone made with
// WebAudio (no audio file to fetch). When it rings is view.js's chimes.

import { $, store } from "./dom.js";

const SOUND_KEY = "letagents.sound";

// soundToggle wires the Sound checkbox and answers ring(), which plays
// the tone when the sound is on.
export function soundToggle() {
  const box = $("sound");
  box.checked = store.get(SOUND_KEY) === "on";
  let ctx = null;
  // A browser lets a page start audio only from a gesture: the first
  // context is made when the box is ticked (or on the first ring after
  // a reload, which the browser may keep muted until a click).
  const audio = () => {
    const AC = window.AudioContext || window.webkitAudioContext;
    if (!ctx && AC) ctx = new AC();
    return ctx;
  };
  box.addEventListener("change", () => {
    store.set(SOUND_KEY, box.checked ? "on" : null);
    if (box.checked) ring();
  });

  function ring() {
    const a = box.checked && audio();
    if (!a) return;
    if (a.state === "suspended") a.resume().catch(() => { /* muted until a gesture */ });
    const t = a.currentTime;
    const osc = a.createOscillator();
    const gain = a.createGain();
    osc.type = "sine";
    osc.frequency.setValueAtTime(880, t);
    osc.frequency.setValueAtTime(660, t + 0.09);
    gain.gain.setValueAtTime(0.0001, t);
    gain.gain.exponentialRampToValueAtTime(0.15, t + 0.02);
    gain.gain.exponentialRampToValueAtTime(0.0001, t + 0.25);
    osc.connect(gain).connect(a.destination);
    osc.start(t);
    osc.stop(t + 0.26);
  }
  return { ring };
}
