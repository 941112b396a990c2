// Renaming the room from its page: an admin's (PATCH /rooms/{room},
// {display_name}); the button is hidden from everyone else, and the
// server's refusal shows under the form.

import { api, errText, jsonPost } from "./api.js";
import { $ } from "./dom.js";

// renameForm wires the Rename button and its form. page is the store
// (the room's path, whether the reader is an admin, the name shown);
// renamed(name) shows the new name.
export function renameForm({ page, renamed }) {
  const open = $("rename");
  const form = $("rename-form");
  const input = $("rename-input");
  const err = $("rename-err");
  const save = $("rename-save");

  const close = () => {
    form.hidden = true;
    open.hidden = !page.get().admin;
    err.textContent = "";
    open.focus();
  };
  open.addEventListener("click", () => {
    input.value = page.get().displayName;
    err.textContent = "";
    form.hidden = false;
    open.hidden = true;
    input.focus();
    input.select();
  });
  $("rename-cancel").addEventListener("click", close);
  form.addEventListener("keydown", (e) => {
    if (e.key === "Escape") { e.preventDefault(); close(); }
  });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    save.disabled = true;
    err.textContent = "";
    try {
      const room = await api(`/rooms/${page.get().path}`, jsonPost("PATCH", { display_name: input.value }), 30000);
      renamed(room && typeof room.display_name === "string" ? room.display_name : input.value.trim());
      close();
    } catch (x) {
      err.textContent = "Could not rename the room: " + errText(x);
      input.focus();
    } finally {
      save.disabled = false;
    }
  });

  // shown shows the button to admins alone (and closes the form when the
  // reader is no admin any more).
  function shown() {
    const { admin } = page.get();
    if (!admin) form.hidden = true;
    open.hidden = !admin || !form.hidden;
  }
  return { shown };
}
