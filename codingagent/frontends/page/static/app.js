// codingagent's page: talks to its server (same origin, URLs relative to the token path).
// Text from the LLM and the workspace is only ever set as textContent, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
let current = null; // the session shown
let view = null; // its last JSON view
let shown = ""; // that view as rendered: the same view again is not rendered again
let live = null; // the card of the turn being applied
let waiting = null; // timer while a terminal watcher applies a queued reply
let queueSession = null; // the session of the queue's running task, as last seen
const QUEUE_POLL_MS = 1500; // the queue's runner is another process: its progress is read

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

async function api(path, body) {
  const options = body === undefined ? {} : {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  };
  let response;
  try {
    response = await fetch(path, options);
  } catch (e) {
    throw new Error("The codingagent server does not answer; is `codingagent ui` still running?");
  }
  const text = await response.text();
  let data;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new Error(text || `The server answered ${response.status}`);
  }
  if (!response.ok) throw new Error(data.error || `The server answered ${response.status}`);
  return data;
}

function showError(message) {
  $("error-text").textContent = message;
  $("error").hidden = false;
}

function notice(message) {
  $("notice").textContent = message || "";
  $("notice").hidden = !message;
}

function plural(n, word) {
  return `${n.toLocaleString("en")} ${word}${n === 1 ? "" : "s"}`;
}

// --- sessions -------------------------------------------------------------------------------

async function loadSessions() {
  const data = await api("api/sessions");
  const list = $("sessions");
  list.replaceChildren();
  for (const s of data.sessions) {
    const item = el("li");
    const link = el("a", s.id === current ? "current" : "");
    link.href = `#${s.id}`;
    link.addEventListener("click", () => openMenu(false));
    link.append(el("code", "", s.id), " ", el("span", "", s.task));
    link.append(el("span", "dim", s.complete ? " · done" : ` · turn ${s.sequence}`));
    item.append(link);
    list.append(item);
  }
  $("empty").hidden = data.sessions.length > 0;
  if (!data.sessions.length) openMenu(true); // on a phone: the New session form at once
  return data;
}

function openMenu(open) {
  $("layout").classList.toggle("open", open);
  $("menu").setAttribute("aria-expanded", String(open));
}

async function previewWorkspace() {
  const given = $("workspace").value;
  const seen = await api(`api/workspace?folder=${encodeURIComponent(given)}`);
  if ($("workspace").value !== given) return; // the user typed on meanwhile
  const line = $("workspace-resolved");
  line.textContent = seen.problem ? `Refused: ${seen.path}: ${seen.problem}` : `Works on ${seen.path}`;
  line.classList.toggle("refused", Boolean(seen.problem));
}

async function show(sessionId) {
  current = sessionId;
  openMenu(false);
  notice("");
  if (location.hash !== `#${sessionId}`) history.replaceState(null, "", `#${sessionId}`);
  await refresh();
}

async function refresh() {
  if (!current) return;
  const asked = current;
  const seen = await api(`api/sessions/${asked}`);
  // Another session chosen while this one's view was on its way: the view that came is stale
  // (its own refresh shows the chosen one), and must not replace it.
  if (asked !== current) return;
  view = seen;
  render();
  await loadSessions();
}

function render() {
  const text = JSON.stringify(view);
  if (text === shown && !live) return; // keeps what the user unfolded
  shown = text;
  const s = view.session;
  $("session").hidden = false;
  $("title").textContent = s.task;
  $("meta").textContent = `Session ${s.id} · workspace ${s.workspace}`;
  $("download-diff").href = `api/sessions/${s.id}/diff`;
  const asking = s.question; // the LLM's ASK: no prompt until the user answers
  $("complete").hidden = !s.complete;
  $("complete").textContent = s.complete ? `Session complete: ${s.summary || ""}` : "";
  $("ask").hidden = !asking;
  $("question").textContent = asking || "";
  $("steps").hidden = s.complete || Boolean(asking) || Boolean(view.review);
  renderReview(view.review); // review.js: a reply's held file changes
  if (view.prompt) {
    const p = view.prompt;
    if ($("prompt").dataset.sequence !== String(p.sequence)) $("copy-status").textContent = "";
    $("prompt").dataset.sequence = p.sequence;
    $("prompt").textContent = p.text;
    $("prompt-size").textContent =
      `Prompt ${p.sequence}: ${p.chars.toLocaleString("en")} characters, ` +
      `~${p.tokens.toLocaleString("en")}` +
      (p.window ? ` of ${p.window.toLocaleString("en")}` : "") + " tokens";
    $("budget").hidden = !p.overBudget;
    $("budget").textContent = p.overBudget
      ? `The prompt is over the token budget (${p.tokenBudget.toLocaleString("en")}); ` +
        "some chat UIs will cut it." : "";
  }
  if (view.interrupted) notice("A turn was interrupted; the next Apply first recovers it.");
  renderApprovals(view.approvals);
  const turns = $("turns");
  turns.replaceChildren();
  live = null;
  if (!view.turns.length) turns.append(el("p", "dim", "No turns yet."));
  view.turns.forEach((turn, i) => turns.append(turnCard(turn, i === 0)));
}

// --- turns ------------------------------------------------------------------------------------

function resultLine(result) {
  const line = el("div", `result ${result.success ? "ok" : "failed"}`);
  line.append(el("span", "headline", result.headline));
  if (result.output) {
    const fold = el("details", "output");
    fold.append(el("summary", "", "output"), el("pre", "", result.output));
    line.append(fold);
  }
  return line;
}

function diffBlock(diff, open) {
  const block = el("details", "diff");
  block.open = open;
  const title = el("summary");
  title.append(el("code", "", diff.path), ` ${diff.change}`);
  if (diff.by) title.append(" by ", el("code", "by", diff.by));
  if (diff.note) title.append(el("span", "dim", ` (${diff.note})`));
  block.append(title);
  if (diff.diff) {
    const pre = el("pre");
    for (const text of diff.diff.replace(/\n$/, "").split("\n")) {
      let kind = "";
      if (text.startsWith("+++") || text.startsWith("---")) kind = "file";
      else if (text.startsWith("@@")) kind = "hunk";
      else if (text.startsWith("+")) kind = "add";
      else if (text.startsWith("-")) kind = "del";
      pre.append(el("span", `line ${kind}`, text));
    }
    block.append(pre);
  }
  return block;
}

function summaryLine(turn) {
  const results = turn.results;
  const ran = results.filter((r) => r.command === "RUN_COMMAND").length;
  const failed = results.filter((r) => !r.success).length;
  const files = turn.diffs ? turn.diffs.length : 0;
  return `${plural(results.length, "command")} (${ran} run), ${plural(files, "file")} changed, ` +
    `${failed} failed`;
}

function turnCard(turn, newest) {
  const card = el("article", "turn");
  card.dataset.sequence = turn.sequence;
  const head = el("h4");
  const when = turn.appliedAt ? new Date(turn.appliedAt).toLocaleString() : "";
  head.append(`Turn ${turn.sequence} `, el("span", "dim", `· ${turn.reply} · ${when}`));
  card.append(head);
  for (const message of turn.messages) {
    const box = el("blockquote", "message");
    box.append(el("strong", "", "Message from the LLM"), el("p", "", message));
    card.append(box);
  }
  turn.results.forEach((r) => card.append(resultLine(r)));
  card.append(el("p", "summary dim", summaryLine(turn)));
  if (turn.diffsProblem) card.append(el("p", "warning", turn.diffsProblem));
  (turn.diffs || []).forEach((d) => card.append(diffBlock(d, newest)));
  if (newest) {
    const undo = el("button", "undo", "Undo this turn");
    undo.addEventListener("click", () => act(undo, () => api(`api/sessions/${current}/undo`, {})));
    card.append(undo);
  }
  return card;
}

function liveCard() {
  if (!live) {
    live = el("article", "turn live");
    live.append(el("h4", "", `Turn ${view.session.sequence}: applying…`));
    const turns = $("turns");
    if (turns.firstChild && turns.firstChild.tagName === "P") turns.firstChild.remove();
    turns.prepend(live);
  }
  return live;
}

// --- approvals --------------------------------------------------------------------------------

function renderApprovals(questions) {
  const box = $("approvals");
  box.replaceChildren();
  for (const q of questions) {
    const card = el("div", "banner approval");
    card.dataset.question = q.id;
    card.append(el("strong", "", "The LLM wants to run this command:"), el("pre", "", q.command));
    for (const [label, allow] of [["Allow", true], ["Deny", false]]) {
      const button = el("button", allow ? "allow" : "deny", label);
      button.addEventListener("click", () =>
        act(button, () => api(`api/approvals/${q.id}`, { allow })));
      card.append(button, " ");
    }
    box.append(card);
  }
}

function addApproval(event) {
  const pending = (view && view.approvals) || [];
  if (!pending.some((q) => q.id === event.id)) pending.push(event);
  view.approvals = pending;
  renderApprovals(pending);
}

function dropApproval(event) {
  view.approvals = (view.approvals || []).filter((q) => q.id !== event.id);
  renderApprovals(view.approvals);
  liveCard().append(el("div", "dim", `Command ${event.why}: ${event.command.split("\n")[0]}`));
}

// --- the queue of tasks (docs/queue.md) -----------------------------------------------------

async function loadQueue() {
  const q = (await api("api/queue")).queue;
  $("queue").hidden = !q;
  if (!q) return;
  $("queue-title").textContent = q.current
    ? `Task ${q.position}/${q.total}: ${q.current.task}`
    : `Queue ${q.id} ended: ${q.completed} of ${q.total} tasks completed` +
      (q.halted ? ` (halted: ${q.halted})` : "");
  $("queue-skip").hidden = !(q.current && q.current.session);
  const list = $("queue-tasks");
  list.replaceChildren();
  for (const t of q.tasks) {
    const item = el("li", t.outcome);
    item.dataset.outcome = t.outcome;
    item.append(el("span", "", t.task), el("span", "dim", ` · ${t.outcome}`));
    if (t.reason) item.append(el("span", "dim", `: ${t.reason}`));
    list.append(item);
  }
  // Follow the queue: when it moves to the next task, show that task's session, unless the
  // user went to look at another session.
  const running = q.current ? q.current.session : null;
  if (running && running !== queueSession) {
    const following = !current || current === queueSession;
    queueSession = running;
    if (following) await show(running);
    else await loadSessions();
  }
}

async function skipTask() {
  const done = await api("api/queue/skip", {});
  notice(`Asked the queue to skip the task of session ${done.skipping}; it moves on in a moment.`);
}

// --- events from the server -------------------------------------------------------------------

function onEvent(event) {
  if (event.type === "hello") {
    $("connection").textContent = "connected";
    return;
  }
  if (event.session !== current || !view) return;
  switch (event.type) {
    case "reply": liveCard(); break;
    case "note": liveCard().append(el("div", "dim", event.text)); break;
    case "running": liveCard().append(el("div", "dim", `Running: ${event.command.split("\n")[0]}`)); break;
    case "result": liveCard().append(resultLine(event.result)); break;
    case "approve": addApproval(event); break;
    case "approved": dropApproval(event); break;
    case "review": refresh().catch((e) => showError(e.message)); break;
    case "turn": if (event.notes.length) notice(event.notes.join("\n")); break;
    case "queued": waitForWatcher(event.path, view.session.sequence); break;
    case "stopped": if (event.message) notice(event.message); // and show the session as it is
    // falls through
    case "prompt": refresh().then(() => copyProblem(event.copyProblem))
      .catch((e) => showError(e.message)); break;
    case "undone": refresh().catch((e) => showError(e.message)); break;
  }
}

function copyProblem(problem) {
  if (problem) {
    $("copy-status").textContent =
      `Not put on the system clipboard (${problem}); the Copy button copies it.`;
  }
}

function connect() {
  const source = new EventSource("api/events");
  source.onmessage = (message) => onEvent(JSON.parse(message.data));
  source.onerror = () => { $("connection").textContent = "reconnecting…"; };
  source.onopen = () => refresh().catch((e) => showError(e.message));
}

// --- actions ------------------------------------------------------------------------------------

async function act(button, action) {
  $("error").hidden = true;
  button.disabled = true;
  try {
    return await action();
  } catch (e) {
    showError(e.message);
    return null;
  } finally {
    button.disabled = false;
  }
}

async function copyPrompt(full) {
  let text = view && view.prompt ? view.prompt.text : "";
  if (full === true) {
    text = (await api(`api/sessions/${current}/full`)).text;
    $("prompt").textContent = text; // what is selected if the clipboard refuses
  }
  try {
    await navigator.clipboard.writeText(text);
  } catch (e) {
    // No clipboard permission: select the prompt, and let the browser's own copy do it.
    $("prompt-box").open = true;
    const range = document.createRange();
    range.selectNodeContents($("prompt"));
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    if (!document.execCommand("copy")) throw new Error("The browser refused to copy; press Ctrl+C");
  }
  $("copy-status").textContent = `Copied ${text.length.toLocaleString("en")} characters.`;
}

// A paste from a browser brings the page's HTML beside its rendered text. The server reads
// it (POST api/paste): a selection of a chat's rendered page goes into the box as read from
// its HTML (code blocks exact, between fences), and the reply stays marked rendered until the
// box is emptied, edits and all (docs/protocol.md, "Answers read from a rendered page").
let pastedRendered = false;

async function pasteReply(event) {
  const html = event.clipboardData && event.clipboardData.getData("text/html");
  const box = $("reply");
  const [start, end] = [box.selectionStart, box.selectionEnd];
  const whole = start === 0 && end === box.value.length; // the paste replaces all there was
  if (whole) pastedRendered = false;
  if (!html) return;
  event.preventDefault();
  const read = await api("api/paste", { text: event.clipboardData.getData("text/plain"), html });
  box.setRangeText(read.text, start, end, "end");
  if (read.rendered) pastedRendered = true;
}

async function applyReply() {
  const reply = $("reply").value;
  if (!reply.trim()) throw new Error("The reply box is empty: paste the LLM's answer into it");
  notice("");
  $("apply-status").textContent = "Applying…";
  const before = view.session.sequence;
  try {
    const rendered = pastedRendered;
    const done = await api(`api/sessions/${current}/apply`, { reply, sequence: before, rendered });
    $("reply").value = "";
    pastedRendered = false;
    if (done.queued) waitForWatcher(done.queued, before);
    else await refresh();
    if (done.review) notice("The reply's file changes wait for your review: Accept or Reject them.");
    if (done.skipped) {
      $("reply").value = reply;
      pastedRendered = rendered;
      notice(done.notes.join("\n"));
    } else if (done.noCommand) offerTakeBack(reply, done.notes, rendered);
  } finally {
    $("apply-status").textContent = "";
  }
}

function offerTakeBack(reply, notes, rendered) {
  // A paste with no command: say so, and offer to take it back before the next prompt is copied.
  notice([...notes, "No command found in the reply: the next prompt asks the LLM to write " +
    "commands. If you pasted the wrong text, take it back first."].join("\n"));
  const button = el("button", "take-back", "Take the paste back");
  button.addEventListener("click", () => act(button, async () => {
    await api(`api/sessions/${current}/undo`, {});
    $("reply").value = reply;
    pastedRendered = rendered;
    notice("The paste was taken back; paste the LLM's answer instead.");
    await refresh();
  }));
  $("notice").append(" ", button);
}

function waitForWatcher(path, before) {
  notice(`A terminal watcher holds this session: the reply was saved as ${path} for it to ` +
    "apply. The turn shows here once it has.");
  clearInterval(waiting);
  const session = current;
  waiting = setInterval(async () => {
    if (current !== session) return clearInterval(waiting); // the user went to another one
    const seen = await api(`api/sessions/${session}`).catch(() => null);
    if (seen && current === session && seen.session.sequence !== before) {
      clearInterval(waiting);
      notice("");
      view = seen;
      render();
    }
  }, 1000);
}

async function answerQuestion() {
  const answer = $("answer").value;
  if (!answer.trim()) throw new Error("The answer box is empty: say what the LLM should know");
  await api(`api/sessions/${current}/answer`, { answer });
  $("answer").value = "";
  await refresh();
}

async function startSession(event) {
  event.preventDefault();
  const task = $("task").value;
  if (!task.trim()) throw new Error("Say what the LLM should do in the task box");
  const done = await api("api/sessions", {
    task, workspace: $("workspace").value, files: $("files").value,
  });
  $("task").value = "";
  $("files").value = "";
  await show(done.session);
}

window.addEventListener("DOMContentLoaded", async () => {
  $("error-close").addEventListener("click", () => { $("error").hidden = true; });
  $("copy").addEventListener("click", () => act($("copy"), copyPrompt));
  $("copy-full").addEventListener("click", () => act($("copy-full"), () => copyPrompt(true)));
  $("apply").addEventListener("click", () => act($("apply"), applyReply));
  $("reply").addEventListener("paste", (e) => act($("apply"), () => pasteReply(e)));
  $("reply").addEventListener("input", () => {
    if (!$("reply").value) pastedRendered = false;
  });
  $("start-form").addEventListener("submit", (e) => act($("start"), () => startSession(e)));
  $("queue-skip").addEventListener("click", () => act($("queue-skip"), skipTask));
  $("answer-send").addEventListener("click", () => act($("answer-send"), answerQuestion));
  $("menu").addEventListener("click", () =>
    openMenu(!$("layout").classList.contains("open")));
  let typing = null;
  $("workspace").addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => previewWorkspace().catch((e) => showError(e.message)), 250);
  });
  previewWorkspace().catch((e) => showError(e.message));
  window.addEventListener("hashchange", () => {
    const id = location.hash.slice(1);
    if (id && id !== current) show(id).catch((e) => showError(e.message));
  });
  try {
    const data = await loadSessions();
    const first = location.hash.slice(1) || data.first;
    if (first) await show(first);
    await loadQueue();
  } catch (e) {
    showError(e.message);
  }
  setInterval(() => loadQueue().catch(() => {}), QUEUE_POLL_MS);
  connect();
});
