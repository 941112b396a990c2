// Export .md: the whole room as one Markdown file, downloaded.

import { api, errText } from "./api.js";
import { $, el, flash } from "./dom.js";
import { numOf } from "./view.js";

// exportButton wires the button. page is the store; gate(err) answers
// whether err closed the room; provenance(m) is what is known of m's
// sender.
export function exportButton({ page, gate, provenance }) {
  const chatNote = $("chat-note");
  $("export").addEventListener("click", async (e) => {
    const b = e.currentTarget;
    const label = b.querySelector(".label") || b; // the icon stays
    const { roomId, path } = page.get();
    b.disabled = true;
    const lines = [`# ${document.title.replace(/ · LetAgents$/, "")}`, "", `Room \`${roomId}\`, exported ${new Date().toISOString()}.`, ""];
    let after = 0, count = 0;
    try {
      for (;;) {
        const body = await api(`/rooms/${path}/messages?after=msg_${after}&limit=500`, {}, 60000);
        const list = (body && Array.isArray(body.messages)) ? body.messages : [];
        for (const m of list) {
          const prov = provenance(m);
          const what = [prov.kind, prov.detail].filter(Boolean).join(", ");
          lines.push(`### ${m.sender} (${what}) · ${m.timestamp} · ${m.id}`, "");
          if (m.thread_parent_id) lines.push(`> reply to ${m.thread_parent_id}`, "");
          lines.push(String(m.text || ""), "");
          after = Math.max(after, numOf(m.id));
        }
        count += list.length;
        label.textContent = `Exporting… ${count}`;
        if (!body || !body.has_more || !list.length) break;
      }
      const blob = new Blob([lines.join("\n")], { type: "text/markdown;charset=utf-8" });
      const a = el("a");
      a.href = URL.createObjectURL(blob);
      a.download = `${roomId.replace(/[^A-Za-z0-9._-]+/g, "_")}-${new Date().toISOString().slice(0, 10)}.md`;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10000);
      flash(chatNote, `Exported ${count} message${count === 1 ? "" : "s"}.`);
    } catch (err) {
      if (!gate(err)) flash(chatNote, "Export failed: " + errText(err));
    }
    label.textContent = "Export .md";
    b.disabled = false;
  });
}
