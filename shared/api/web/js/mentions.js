// @mentions on the room page, without the DOM: where a message's text
// mentions someone (the server's rules, shared/letagents/mentions.go),
// whether a mention names the reader, and what the composers' @mention
// autocomplete offers and inserts. message.js and compose.js draw them.

import { parseLabel } from "./view.js";

const nameByte = (c) => /^[A-Za-z0-9._-]$/.test(c);

// mentionName is the key an "@Name" mention of a display name resolves
// by, as the server computes it: its letters, digits, '.', '_' and '-',
// in lower case, without trailing dots; "" when no letter or digit is left.
export function mentionName(display) {
  const kept = [...String(display || "")].filter(nameByte).join("");
  if (!/[A-Za-z0-9]/.test(kept)) return "";
  return kept.replace(/\.+$/, "").toLowerCase();
}

// labelKey is the key of an "@[label]" mention: white space collapsed,
// lower case.
const labelKey = (label) => String(label || "").trim().split(/\s+/).join(" ").toLowerCase();

// mentionParts splits text into runs: plain text ({text}) and mentions
// ({text, key}, text the "@…" as written, key what it resolves by). An
// '@' inside a word (an e-mail address) or in `code` mentions nobody.
export function mentionParts(text) {
  text = String(text || "");
  const out = [];
  let plain = "";
  let inCode = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "`") inCode = !inCode;
    const prev = i > 0 ? text[i - 1] : "";
    if (c !== "@" || inCode || nameByte(prev) || prev === "@") { plain += c; continue; }
    let j = i + 1, key = "";
    if (text[j] === "[") {
      const end = text.indexOf("]", j + 1);
      if (end < 0 || end - j > 200 || text.slice(j + 1, end).includes("\n")) { plain += c; continue; }
      j = end + 1;
      key = labelKey(text.slice(i + 2, end));
    } else {
      while (j < text.length && nameByte(text[j])) j++;
      // A name running on into letters outside ASCII is not the one its
      // ASCII part spells.
      if (j < text.length && text.charCodeAt(j) > 127) { plain += c; continue; }
      key = mentionName(text.slice(i + 1, j));
    }
    if (!key) { plain += c; continue; }
    // A trailing dot ends the sentence, not the name.
    let written = text.slice(i, j);
    const dots = /\.+$/.exec(written);
    if (dots && text[i + 1] !== "[") { written = written.slice(0, -dots[0].length); j -= dots[0].length; }
    if (plain) out.push({ text: plain });
    plain = "";
    out.push({ text: written, key });
    i = j - 1;
  }
  if (plain) out.push({ text: plain });
  return out;
}

// readerKeys are the mention keys that name the reader: a signed-in
// person's login and display name (both forms: @name and @[name]).
export function readerKeys(account) {
  const keys = new Set();
  if (!account) return keys;
  for (const n of [account.login, account.display_name]) {
    if (typeof n !== "string" || !n.trim()) continue;
    const k = mentionName(n);
    if (k) keys.add(k);
    keys.add(labelKey(n));
  }
  return keys;
}

// mentionsReader says whether text mentions the reader, whose mention
// keys are reader (readerKeys).
export function mentionsReader(text, reader) {
  return reader.size > 0 && mentionParts(text).some((p) => p.key && reader.has(p.key));
}

// mentionQuery is the @mention being typed at caret in text: { start,
// query }, start the index of its '@' and query the name part typed so
// far (maybe ""); null when the caret is not in one.
export function mentionQuery(text, caret) {
  text = String(text || "");
  let i = Math.min(caret, text.length) - 1;
  while (i >= 0 && nameByte(text[i])) i--;
  if (i < 0 || text[i] !== "@") return null;
  const prev = i > 0 ? text[i - 1] : "";
  if (nameByte(prev) || prev === "@" || prev === "`") return null;
  if ((text.slice(0, i).match(/`/g) || []).length % 2) return null; // in inline code
  return { start: i, query: text.slice(i + 1, caret) };
}

// mentionToken is what choosing name inserts: "@Name" when the server's
// rule for @Name resolves to it (ASCII names: "Calm Otter" is
// @CalmOtter), else "@[name]".
export function mentionToken(name) {
  name = String(name || "").trim();
  const compact = [...name].filter(nameByte).join("").replace(/\.+$/, "");
  const ascii = !/[^\x20-\x7e]/.test(name);
  return ascii && compact && mentionName(compact) === mentionName(name) ? "@" + compact : "@[" + name + "]";
}

// mentionNames are the names the autocomplete offers: the display name
// of each of the room's people and agents (GET …/participants, as the
// page's live state keeps it), most recently seen first.
export function mentionNames(participants) {
  const out = [];
  for (const p of Array.isArray(participants) ? participants : []) {
    if (!p || typeof p !== "object") continue;
    const name = (typeof p.display_name === "string" && p.display_name.trim()) || parseLabel(p.actor_label).display;
    if (name) out.push(name);
  }
  return out;
}

// MAX_SUGGESTIONS bounds the autocomplete's list.
export const MAX_SUGGESTIONS = 8;

// suggestions are the people and agents of names (display names, each
// offered once) that query may be the start of: names starting with it
// first, then names with a word starting with it, each group in the
// order given; at most MAX_SUGGESTIONS.
export function suggestions(names, query) {
  const q = String(query || "").toLowerCase();
  const seen = new Set();
  const starts = [], words = [];
  for (const raw of names) {
    const name = typeof raw === "string" ? raw.trim() : "";
    const key = name.toLowerCase();
    if (!name || seen.has(key)) continue;
    seen.add(key);
    const squeezed = mentionName(name);
    if (!q || key.startsWith(q) || squeezed.startsWith(q)) starts.push(name);
    else if (key.split(/[^a-z0-9]+/).some((w) => w.startsWith(q))) words.push(name);
  }
  return starts.concat(words).slice(0, MAX_SUGGESTIONS);
}

// applyMention is text with the mention being typed (from start, the
// '@', to caret) replaced by the token of name and a space: { text,
// caret }, the caret after the space.
export function applyMention(text, start, caret, name) {
  const token = mentionToken(name) + " ";
  let rest = text.slice(caret);
  // The rest of a name the caret was inside goes too.
  while (rest && nameByte(rest[0])) rest = rest.slice(1);
  if (rest.startsWith(" ")) rest = rest.slice(1);
  const before = text.slice(0, start) + token;
  return { text: before + rest, caret: before.length };
}
