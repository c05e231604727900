// The extension's part inside the attached chat tab (docs/relay.md, "The extension and the
// chats"): it puts each prompt the service worker hands it into the chat's composer and sends
// it, shows a status pill with Pause, and adds an Apply button under each finished answer.
// It reads an answer's text only when the user clicks that answer's Apply (through the chat's
// own Copy where it has one, else the answer's rendered text, read as pagetext.js reads a
// page), and sends it nowhere but to the extension's service worker, which posts it to the relay
// on 127.0.0.1.
"use strict";

(() => {
  if (globalThis.codingagentRelay) {
    globalThis.codingagentRelay.hello();
    return;
  }
  const A = globalThis.codingagentAdapters;
  const D = globalThis.codingagentDiscover; // answers on a page no adapter knows (adapters/discover.js)
  const P = globalThis.codingagentPageText;
  const adapter = A.choose(location);
  const QUIET_MS = 1000; // an answer that has not changed for this long, with no Stop shown, is finished
  const answers = new Map(); // answer element -> {bound prompt id, last change, Apply host}
  let sentPromptId = null; // the last prompt this tab sent: answers that appear after it answer it
  let paused = false;
  let session = "";

  // ---- the status pill -------------------------------------------------------------------
  const host = document.createElement("codingagent-relay");
  host.style.cssText = "all: initial; position: fixed; z-index: 2147483647; right: 16px; top: 64px;";
  const shadow = host.attachShadow({ mode: "open" });
  shadow.innerHTML = `
    <style>
      .pill { font: 13px/1.35 system-ui, sans-serif; background: #111827; color: #f9fafb;
        border-radius: 999px; padding: 6px 8px 6px 12px; display: flex; gap: 8px;
        align-items: center; box-shadow: 0 2px 10px rgba(0,0,0,.3); max-width: 560px; }
      .dot { width: 9px; height: 9px; border-radius: 50%; background: #38bdf8; flex: none; }
      .pill[data-level=ok] .dot { background: #22c55e; }
      .pill[data-level=busy] .dot { background: #f59e0b; }
      .pill[data-level=error] { background: #7f1d1d; }
      .pill[data-level=error] .dot { background: #fca5a5; }
      .who { font-weight: 600; white-space: nowrap; }
      .text { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
      button { font: inherit; font-size: 12px; border: 0; border-radius: 999px; padding: 3px 10px;
        cursor: pointer; background: #374151; color: #f9fafb; flex: none; }
      button[hidden] { display: none; }
    </style>
    <div class="pill" role="status" aria-live="polite" data-level="info">
      <span class="dot"></span><span class="who"></span><span class="text"></span>
      <button class="review" hidden title="Open the page where you accept or reject the answer's file changes">Open the review</button>
      <button class="selection" hidden title="Send the text you selected as the answer">Apply selection</button>
      <button class="pause">Pause</button>
    </div>`;
  const pill = shadow.querySelector(".pill");
  const who = shadow.querySelector(".who");
  const line = shadow.querySelector(".text");
  const pauseButton = shadow.querySelector(".pause");
  const selectionButton = shadow.querySelector(".selection");
  const reviewButton = shadow.querySelector(".review");
  document.documentElement.append(host);

  // A held review (docs/review.md): the button opens the page that decides it, if there is one.
  function setReview(review) {
    reviewButton.hidden = !(review && review.url);
  }

  reviewButton.addEventListener("click", async () => {
    const opened = await send({ type: "open_review" });
    if (opened && opened.error) show(opened.error, "error");
  });

  function show(text, level = "info") {
    line.textContent = text;
    line.title = text;
    pill.dataset.level = level;
    who.textContent = `${session ? `session ${session}` : "codingagent"} · ${adapter.name}`;
  }

  pauseButton.addEventListener("click", async () => {
    paused = !paused;
    pauseButton.textContent = paused ? "Resume" : "Pause";
    await send({ type: "pause", paused });
  });

  selectionButton.addEventListener("click", () => {
    const selection = getSelection();
    if (!selection || !String(selection).trim()) {
      show("Select the answer's text first, then click Apply selection", "error");
      return;
    }
    apply({ text: P.fromSelection(selection), via: "the selection", rendered: true }, null, null);
  });

  async function send(message) {
    try {
      return await chrome.runtime.sendMessage(message);
    } catch (error) {
      show(`the extension is not running (${error.message}); reload this tab`, "error");
      return null;
    }
  }

  // ---- prompts in ------------------------------------------------------------------------
  const findComposer = () => (adapter.findComposer ? adapter.findComposer() : A.first(adapter.composer));
  const findSend = (composer) =>
    adapter.findSend ? adapter.findSend(composer) : A.first(adapter.send);
  const busy = () => Boolean(A.first(adapter.stop));

  async function putPrompt(message) {
    const name = adapter.name;
    const failed = (error, retry) => {
      show(error, "error");
      return { ok: false, error, retry };
    };
    show(`putting prompt ${message.sequence} in (${message.chars.toLocaleString()} characters)…`, "busy");
    const composer = await A.until(findComposer, 5000);
    if (!composer) return failed(`${name}: composer not found — the site may have changed`, true);
    const how = await A.insertPrompt(adapter, composer, message.text);
    if (!how) {
      return failed(`${name}: the composer did not take the prompt — the site may have changed`, true);
    }
    // A send button may be drawn, or enabled, only once the composer holds text: it is waited
    // for. On a page no adapter knows, a composer with no send button near it within a second
    // is sent with Enter then, not after the five seconds an enabled button may take.
    const generic = adapter.id === "generic";
    const near = !generic || (await A.until(() => findSend(composer), 1000));
    const button = near
      ? await A.until(() => {
          const found = findSend(composer);
          return A.enabled(found) ? found : null;
        }, 5000)
      : null;
    if (adapter.id === "generic") D.mark(message.text, message.prompt_id); // not the answer
    if (button) button.click();
    else if (adapter.id === "generic") A.pressEnter(composer);
    else return failed(`${name}: send button not found — the site may have changed`, false);
    const sent = await A.until(() => busy() || !A.holds(findComposer() || composer, message.text), 5000);
    if (!sent) return failed(`${name}: the prompt is in the composer but was not sent — press Send`, false);
    sentPromptId = message.prompt_id;
    show(`prompt ${message.sequence} sent — waiting for the answer`, "busy");
    return { ok: true, how };
  }

  // ---- answers out: Apply ----------------------------------------------------------------
  function noteChanges(element, info) {
    info.observer = new MutationObserver((records) => {
      if (records.some((r) => !(r.target instanceof Element && r.target.closest("codingagent-apply")))) {
        info.changed = Date.now();
      }
    });
    info.observer.observe(element, { childList: true, subtree: true, characterData: true });
  }

  function scan(initial) {
    const found = A.all(adapter.answers);
    // A page no adapter knows, with no answer markers: the answer found by what the page did.
    const discovered = adapter.id === "generic" && !found.length ? D.answer() : null;
    if (discovered) found.push(discovered);
    for (const element of found) {
      if (answers.has(element)) continue;
      const info = { bound: initial ? null : sentPromptId, changed: Date.now(), host: null, done: false };
      info.discovered = element === discovered;
      if (info.discovered) info.bound = D.promptId(); // set before the send, so never behind
      answers.set(element, info);
      noteChanges(element, info);
    }
    const writing = busy() || (discovered !== null && D.stopShown());
    if (discovered) answers.get(discovered).changed = Math.max(answers.get(discovered).changed, D.changedAt());
    for (const [element, info] of answers) {
      // a discovered element the page has since outgrown (a "thinking…" placeholder) goes
      const outgrown = info.discovered && discovered && element !== discovered && !info.done;
      if (!element.isConnected || outgrown) {
        if (info.host) info.host.remove();
        info.observer.disconnect();
        answers.delete(element);
        continue;
      }
      const finished = Date.now() - info.changed >= QUIET_MS && !writing;
      if (finished && !(info.host && info.host.isConnected)) addApply(element, info);
    }
    selectionButton.hidden = adapter.id !== "generic"; // the fallback where answers are guessed
  }

  function addApply(element, info) {
    const holder = document.createElement("codingagent-apply");
    holder.style.cssText = "all: initial; display: block; margin: 6px 0 10px;";
    const root = holder.attachShadow({ mode: "open" });
    root.innerHTML = `
      <style>
        button { font: 600 13px system-ui, sans-serif; border: 1px solid #0369a1; color: #fff;
          background: #0284c7; border-radius: 8px; padding: 5px 14px; cursor: pointer; }
        button:disabled { background: #9ca3af; border-color: #9ca3af; cursor: default; }
        span { font: 12px system-ui, sans-serif; color: #6b7280; margin-left: 8px; }
      </style>
      <button type="button" title="Send this answer to codingagent">Apply</button><span></span>`;
    const button = root.querySelector("button");
    const note = root.querySelector("span");
    if (info.done) {
      button.disabled = true;
      button.textContent = "Applied";
    }
    button.addEventListener("click", async () => {
      button.disabled = true;
      button.textContent = "Applying…";
      const answer = await readAnswer(element);
      if (info.discovered) answer.via = `the answer found on the page, ${answer.via}`;
      const outcome = await apply(answer, info.bound, note);
      info.done = Boolean(outcome && (outcome.applied || outcome.review));
      button.textContent = info.done ? (outcome.review ? "In review" : "Applied") : "Apply";
      button.disabled = info.done;
    });
    element.after(holder);
    info.host = holder;
    if (info.bound === sentPromptId && sentPromptId) show("answer finished — click Apply to send it", "ok");
  }

  // `answer`: {text, via, rendered}: read from the page's rendered text (rendered), or through
  // the chat's Copy.
  async function apply(answer, promptId, note) {
    const { text, via, rendered } = answer;
    if (!text.trim()) {
      show(`${adapter.name}: the answer is empty — nothing applied`, "error");
      return null;
    }
    show(`applying the answer (${text.length.toLocaleString()} characters, ${via})…`, "busy");
    const outcome = await send({ type: "apply", prompt_id: promptId, text, rendered, url: location.href });
    if (!outcome) return null;
    if (outcome.error) show(outcome.error, "error");
    else if (outcome.refused) show(`refused: ${outcome.refused}`, "error");
    else if (outcome.review) {
      const review = outcome.review;
      const how = review.url ? "Open the review to decide" : `decide ${review.where}`;
      show(`review waiting: ${review.summary} — ${how}`, "busy");
      setReview(review);
    }
    else if (outcome.applied) {
      const results = outcome.results || [];
      const failed = results.filter((r) => !r.startsWith("[OK]"));
      const first = failed.length ? ` — ${failed[0]}` : "";
      show(
        outcome.done
          ? `applied (${via}) — the session is done`
          : `applied (${via}): ${results.length} commands, ${failed.length} not OK${first}`,
        failed.length ? "error" : "ok",
      );
    }
    if (note && outcome.applied) {
      // Kept beside the answer (the pill moves on to the next prompt): what was not OK, first.
      const results = outcome.results || [];
      const failed = results.filter((r) => !r.startsWith("[OK]"));
      note.textContent = `${results.length} results${failed.length ? `, ${failed.length} not OK: ${failed[0]}` : ""}`;
      note.title = failed.join("\n");
    } else if (note) note.textContent = "";
    return outcome;
  }

  // The chat's own Copy gives the answer as its author wrote it (markdown, code fences); the
  // page's copy is captured by page/copyhook.js only while armed here. Without a Copy, or when
  // it does not answer in time, the answer's rendered text is read (pagetext.js): exact inside
  // its code blocks only, so it goes with rendered: true.
  async function readAnswer(element) {
    // An answer may be the direct child of a shadow root: then that root is its scope.
    const scope =
      (adapter.turn.length && element.closest(adapter.turn.join(","))) || element.parentElement || element.parentNode;
    const copy = adapter.copy.length ? scope.querySelector(adapter.copy.join(",")) : null;
    if (copy) {
      const copied = await viaCopy(copy);
      if (copied && copied.text.trim()) return copied;
    }
    return { text: P.fromElement(element), via: "the answer's text", rendered: true };
  }

  function viaCopy(button) {
    const nonce = Math.random().toString(36).slice(2);
    return new Promise((resolve) => {
      const finish = (text) => {
        document.removeEventListener("codingagent-copied", onHook);
        document.removeEventListener("copy", onCopy);
        document.documentElement.removeAttribute("data-codingagent-copy");
        clearTimeout(timer);
        resolve(text);
      };
      const raw = (text) => ({ text, via: "the chat's Copy", rendered: false });
      const onHook = (event) => {
        const { nonce: seen, text } = JSON.parse(event.detail);
        if (seen === nonce) finish(raw(text));
      };
      // A Copy that copies by selecting the rendered answer sets no text of its own: read the
      // selection as the page shows it.
      const onCopy = (event) => {
        setTimeout(() => {
          const text = event.clipboardData.getData("text/plain");
          if (text) return finish(raw(text));
          finish({ text: P.fromSelection(getSelection()), via: "the chat's Copy (its selection)", rendered: true });
        }, 0);
      };
      const timer = setTimeout(() => finish(null), 2000);
      document.addEventListener("codingagent-copied", onHook);
      document.addEventListener("copy", onCopy);
      document.documentElement.setAttribute("data-codingagent-copy", nonce);
      button.click();
    });
  }

  // ---- wiring ----------------------------------------------------------------------------
  chrome.runtime.onMessage.addListener((message, _sender, reply) => {
    if (message.type === "prompt") {
      putPrompt(message).then(reply);
      return true;
    }
    if (message.type === "detached") {
      // another tab took the session, or the user detached: leave this page as it was
      clearInterval(scanning);
      clearInterval(greeting);
      D.stop();
      for (const [, info] of answers) {
        info.observer.disconnect();
        if (info.host) info.host.remove();
      }
      answers.clear();
      host.remove();
      delete globalThis.codingagentRelay;
      reply({ ok: true });
      return false;
    }
    if (message.type === "status") {
      session = message.session || session;
      paused = Boolean(message.paused);
      pauseButton.textContent = paused ? "Resume" : "Pause";
      if (message.text) show(message.text, message.level);
      setReview(message.review);
      if (message.sent_prompt_id && !sentPromptId) sentPromptId = message.sent_prompt_id;
      reply({ ok: true });
    }
    return false;
  });

  async function hello() {
    const state = await send({ type: "hello", adapter: adapter.id });
    if (!state) return;
    session = state.session || "";
    paused = Boolean(state.paused);
    pauseButton.textContent = paused ? "Resume" : "Pause";
    if (state.sent_prompt_id) sentPromptId = state.sent_prompt_id;
    show(state.text || "attached", state.level || "info");
    setReview(state.review);
  }

  globalThis.codingagentRelay = { hello, adapter: adapter.id };
  show(`attached — ${adapter.name}`, "info");
  scan(true);
  const scanning = setInterval(() => scan(false), 300);
  const greeting = setInterval(hello, 20000); // also keeps the service worker's poll alive
  hello();
})();
