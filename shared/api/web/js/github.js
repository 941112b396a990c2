// What the room page shows of a GitHub event (GET …/events, the stream's
// github_event): its icon and kind, the object it names, who did it, its
// state and its link, decided from the event alone, without the DOM.
// message.js draws the card; ghevents.js keeps the events.

// Tones of a state: ok (merged, approved, passed), bad (failed, changes
// requested, closed unmerged) or "" (the rest).
const OK = "ok";
const BAD = "bad";

// failing are the check conclusions that fail a branch, as the server's
// githubhook.Failing says.
const failing = new Set(["failure", "timed_out", "action_required", "startup_failure"]);

const str = (v) => (typeof v === "string" ? v : "");
const meta = (ev) => (ev.metadata && typeof ev.metadata === "object" ? ev.metadata : {});

// safeLink is u when it is an https URL on GitHub (github.com) or on
// host, the room's own repository host (a GitHub Enterprise room), with
// no credentials in it; else "". The page links nothing else a payload
// names.
export function safeLink(u, host = "") {
  if (typeof u !== "string" || !u) return "";
  let x;
  try { x = new URL(u); } catch { return ""; }
  const hosts = new Set(["github.com", String(host || "").toLowerCase()]);
  if (x.protocol !== "https:" || x.username || x.password || !hosts.has(x.hostname.toLowerCase())) return "";
  return x.href;
}

// kindOf is the icon and the words of an event's kind: what happened.
function kindOf(ev) {
  const state = str(ev.state);
  const action = str(ev.action);
  switch (ev.event_type) {
    case "pull_request":
      if (state === "merged") return { icon: "pr-merged", label: "Pull request merged", tone: OK };
      if (state === "closed" || action === "closed") return { icon: "pr-closed", label: "Pull request closed", tone: BAD };
      return {
        icon: "pr-open", tone: "",
        label: { reopened: "Pull request reopened", ready_for_review: "Pull request ready for review", synchronize: "Pull request updated" }[action]
          || (state === "draft" ? "Draft pull request opened" : "Pull request opened"),
      };
    case "pull_request_review":
      return {
        icon: "review",
        label: { approved: "Review: approved", changes_requested: "Review: changes requested", dismissed: "Review dismissed" }[state] || "Review",
        tone: state === "approved" ? OK : state === "changes_requested" ? BAD : "",
      };
    case "issue_comment":
      return { icon: "comment", label: "Comment on a pull request", tone: "" };
    case "check_run":
    case "check_suite": {
      const what = ev.event_type === "check_suite" ? "Check suite" : "Check";
      if (state === "success") return { icon: "check-pass", label: `${what} passed`, tone: OK };
      if (failing.has(state)) return { icon: "check-fail", label: `${what} failed`, tone: BAD };
      return { icon: "check-done", label: `${what} finished`, tone: "" };
    }
    case "push":
      return { icon: "push", label: "Pushed", tone: "" };
  }
  // A kind this page does not know yet: said as the server names it.
  return { icon: "push", label: [str(ev.event_type), action].filter(Boolean).join(" ").replace(/_/g, " ") || "GitHub event", tone: "" };
}

// githubCard is what the card of event ev shows: icon, label (its kind),
// tone, subject (the object's words: "#12 Add widgets", a check's name,
// a push's commit title), href (its link on GitHub, "" when none is
// safe; host as safeLink takes it), actor, state (as GitHub says it,
// underscores as spaces), branch and task (the linked task's id).
export function githubCard(ev, host = "") {
  if (!ev || typeof ev !== "object") return null;
  const k = kindOf(ev);
  const m = meta(ev);
  const title = str(ev.title);
  const object = str(ev.github_object_id);
  let subject = title;
  let branch = str(ev.branch);
  switch (ev.event_type) {
    case "pull_request":
    case "pull_request_review":
    case "issue_comment":
      subject = [object && `#${object}`, title].filter(Boolean).join(" ");
      break;
    case "push": {
      const to = str(m.ref).replace(/^refs\/heads\//, "");
      if (to) { k.label = `Pushed to ${to}`; branch = branch || to; }
      const n = Number(m.commits);
      if (Number.isInteger(n) && n > 0) k.label += ` (${n} commit${n === 1 ? "" : "s"})`;
      subject = title || object.slice(0, 7);
      break;
    }
  }
  const state = str(ev.state).replace(/_/g, " ");
  return {
    icon: k.icon, label: k.label, tone: k.tone, subject: subject || k.label, href: safeLink(ev.github_object_url, host),
    actor: str(ev.actor_login), state, branch, task: str(ev.linked_task_id),
  };
}
