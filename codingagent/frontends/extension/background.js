// The extension's service worker (docs/relay.md): it alone talks to the relay that
// `codingagent start --relay` serves on 127.0.0.1 (the contract: docs/http-api.md, relay
// section). It pairs (popup), attaches a tab (popup), long-polls /prompt and hands each new
// prompt to the attached tab's content script, and posts an answer to /reply when the user
// clicks Apply in that tab. Everything it keeps is in chrome.storage.local, because a service
// worker is stopped when idle and started again by the next event.
"use strict";

const API = "/relay/v1";
const WAIT_SECONDS = 20; // under the service worker's 30 s idle limit
const CONTENT_FILES = [
  "adapters/base.js",
  "adapters/chatgpt.js",
  "adapters/claude.js",
  "adapters/gemini.js",
  "adapters/aistudio.js",
  "adapters/deepseek.js",
  "adapters/mistral.js",
  "adapters/openwebui.js",
  "adapters/discover.js",
  "adapters/generic.js",
  "pagetext.js",
  "content.js",
];

const load = () => chrome.storage.local.get(null);
const save = (values) => chrome.storage.local.set(values);

async function setStatus(text, level = "info", extra = {}) {
  const status = { text, level, at: Date.now(), ...extra };
  await save({ status });
  const { tabId, session, paused, delivered } = await load();
  if (tabId == null) return;
  try {
    await chrome.tabs.sendMessage(tabId, {
      type: "status",
      ...status,
      session,
      paused: Boolean(paused),
      sent_prompt_id: delivered,
    });
  } catch {
    // the tab is loading or gone: it asks for the status when its content script starts
  }
}

class RelayError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

async function relay(path, { method = "GET", body, token, relayUrl, signal } = {}) {
  const stored = await load();
  const base = (relayUrl || stored.relay || "").replace(/\/+$/, "");
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const bearer = token === undefined ? stored.token : token;
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  let response;
  try {
    response = await fetch(`${base}${API}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      signal,
    });
  } catch (error) {
    if (error.name === "AbortError") throw error; // the poll was woken on purpose
    throw new RelayError(
      `the relay at ${base} does not answer — is \`codingagent start --relay\` running (or its port forwarded)?`,
      0,
    );
  }
  if (response.status === 204) return null;
  let data = {};
  try {
    data = await response.json();
  } catch {
    data = {};
  }
  if (!response.ok) {
    const why = data.error || `HTTP ${response.status}`;
    if (response.status === 401) {
      throw new RelayError(`the relay does not know this pairing (${why}): pair again in the popup`, 401);
    }
    throw new RelayError(`the relay refused: ${why}`, response.status);
  }
  return data;
}

// ---- pairing and attaching (from the popup) ------------------------------------------------
async function pair({ relayUrl, code }) {
  const url = relayUrl.trim().replace(/\/+$/, "");
  if (!/^https?:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/.test(url)) {
    return { error: "the relay address must be http://127.0.0.1:PORT or http://localhost:PORT" };
  }
  try {
    const data = await relay("/pair", { method: "POST", body: { code: code.trim() }, token: null, relayUrl: url });
    await save({
      relay: url,
      token: data.token,
      session: data.session,
      task: data.task,
      delivered: null,
      done: false,
    });
    await setStatus(`paired with session ${data.session} — attach a chat tab`, "ok");
    return { session: data.session, task: data.task };
  } catch (error) {
    return { error: error.message };
  }
}

async function attach({ tabId }) {
  const { token, session, tabId: before } = await load();
  if (!token) return { error: "pair first: the relay's pairing code is printed in the terminal" };
  try {
    await inject(tabId);
  } catch (error) {
    return { error: `cannot use this tab: ${error.message}` };
  }
  // Another tab takes over: the old one is told, and the new one gets the current prompt.
  const moved = before !== tabId;
  if (before != null && moved) await leave(before);
  await save({ tabId, paused: false, blocked: null, ...(moved ? { delivered: null } : {}) });
  await setStatus(`attached to session ${session} — waiting for the prompt`, "info");
  wake(); // a long poll in flight waits for a prompt newer than the old tab's: not this tab's
  poll();
  return { ok: true, session };
}

async function inject(tabId) {
  await chrome.scripting.executeScript({ target: { tabId }, files: ["page/copyhook.js"], world: "MAIN" });
  await chrome.scripting.executeScript({ target: { tabId }, files: CONTENT_FILES });
}

// Tell a tab it is no longer attached: its pill and Apply buttons go.
async function leave(tabId) {
  try {
    await chrome.tabs.sendMessage(tabId, { type: "detached" });
  } catch {
    // closed or reloaded: nothing of ours is left in it
  }
}

async function detach() {
  const { tabId } = await load();
  if (tabId != null) await leave(tabId);
  await save({ tabId: null });
  await setStatus("not attached", "info");
  return { ok: true };
}

async function unpair() {
  const { token, tabId } = await load();
  if (token) {
    try {
      await relay("/unpair", { method: "POST", body: {} });
    } catch {
      // the relay may be gone: forget the pairing here anyway
    }
  }
  if (tabId != null) await leave(tabId);
  await chrome.storage.local.remove([
    ...["token", "session", "task", "tabId", "delivered", "status", "blocked", "paused", "done"],
    "reviewSeen",
  ]);
  return { ok: true };
}

// ---- the loop: prompts into the tab --------------------------------------------------------
let polling = false;
let inflight = null; // the long poll's AbortController, while one waits

// End the long poll in flight, so the loop reads what it knows again at once (another tab was
// attached: it needs the current prompt, not the next one).
function wake() {
  if (inflight) inflight.abort();
}

async function poll() {
  if (polling) return;
  polling = true;
  const keepAlive = setInterval(() => chrome.runtime.getPlatformInfo(), 20000);
  try {
    for (;;) {
      const stored = await load();
      if (!stored.token || stored.tabId == null || stored.paused || stored.done) break;
      if (stored.blocked) break; // a prompt failed to go in: wait for the user (Resume, re-attach)
      let prompt;
      inflight = new AbortController();
      try {
        const after = stored.delivered ? `after=${encodeURIComponent(stored.delivered)}&` : "";
        const seen = stored.reviewSeen ? `review=${encodeURIComponent(stored.reviewSeen)}&` : "";
        prompt = await relay(`/prompt?${after}${seen}wait=${WAIT_SECONDS}`, { signal: inflight.signal });
      } catch (error) {
        if (error.name === "AbortError") continue; // woken: read the state again
        await setStatus(error.message, "error");
        if (error.status === 401 || error.status === 403) break;
        await new Promise((resolve) => setTimeout(resolve, 3000));
        continue;
      } finally {
        inflight = null;
      }
      if (!prompt) continue; // 204: nothing new yet
      if (prompt.review) {
        await reviewWaits(prompt.review);
        continue;
      }
      if (prompt.done) {
        await save({ done: true });
        await setStatus(`session done: ${prompt.summary || "finished"}`, "ok");
        break;
      }
      const now = await load();
      if (now.paused || now.tabId == null || prompt.prompt_id === now.delivered) continue;
      await deliver(now.tabId, prompt);
    }
  } finally {
    clearInterval(keepAlive);
    polling = false;
  }
}

async function deliver(tabId, prompt) {
  let outcome;
  try {
    outcome = await chrome.tabs.sendMessage(tabId, { type: "prompt", ...prompt });
  } catch (error) {
    // no content script (the tab navigated or reloaded): put it back and try once more
    try {
      await inject(tabId);
      outcome = await chrome.tabs.sendMessage(tabId, { type: "prompt", ...prompt });
    } catch (again) {
      outcome = { ok: false, error: `the attached tab cannot take the prompt: ${again.message}`, retry: true };
    }
  }
  if (outcome && outcome.ok) {
    await save({ delivered: prompt.prompt_id, blocked: null });
    await setStatus(`prompt ${prompt.sequence} sent — waiting for the answer`, "busy");
    return;
  }
  const error = (outcome && outcome.error) || "the tab did not answer";
  await save({ blocked: prompt.prompt_id });
  await setStatus(`${error} (Pause, then Resume, tries again)`, "error");
}

// ---- a held review (docs/review.md) -------------------------------------------------------
// The answer's file changes wait for the user's review: the pill says so, with a button that
// opens the page where it is decided (when the relay knows one: `codingagent ui --relay`).
async function reviewWaits(review) {
  await save({ reviewSeen: review.id });
  const how = review.url ? "Open the review to decide" : `decide ${review.where}`;
  await setStatus(`review waiting: ${review.summary} — ${how}`, "busy", { review });
}

async function openReview() {
  const { status } = await load();
  const url = status && status.review && status.review.url;
  // Only the page of an agent on this machine (the relay said where): never another site.
  if (!url || !/^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?\//.test(url)) {
    return { error: "no review page to open: decide in the agent's terminal (codingagent review)" };
  }
  await chrome.tabs.create({ url });
  return { ok: true };
}

// ---- answers: Apply -----------------------------------------------------------------------
async function apply({ prompt_id, text, url, rendered }) {
  const stored = await load();
  let promptId = prompt_id || stored.delivered;
  try {
    if (!promptId) promptId = (await relay("/state")).prompt_id;
    const outcome = await relay("/reply", {
      method: "POST",
      body: { prompt_id: promptId, text, source_url: url, rendered: Boolean(rendered) },
    });
    if (outcome.done) await save({ done: true });
    if (outcome.review) await reviewWaits(outcome.review);
    poll();
    return outcome;
  } catch (error) {
    return { error: error.message };
  }
}

async function hello(sender) {
  const stored = await load();
  if (!sender.tab || sender.tab.id !== stored.tabId) {
    return { text: "this tab is not attached (use the popup)", level: "error" };
  }
  poll();
  const status = stored.status || {};
  return {
    session: stored.session,
    paused: Boolean(stored.paused),
    sent_prompt_id: stored.delivered,
    text: status.text,
    level: status.level,
    review: status.review,
  };
}

async function pause({ paused }) {
  await save({ paused, blocked: null });
  if (paused) await setStatus("paused: no prompt goes in until Resume", "info");
  else {
    await setStatus("resumed — waiting for the prompt", "info");
    poll();
  }
  return { ok: true };
}

const handlers = { pair, attach, detach, unpair, pause, apply, open_review: openReview };

chrome.runtime.onMessage.addListener((message, sender, reply) => {
  // A chat page's content script, not one of the extension's own pages (the popup, which a
  // test may open in a tab of its own).
  const fromTab = !(sender.url || "").startsWith(chrome.runtime.getURL(""));
  const run = async () => {
    if (message.type === "hello") return hello(sender);
    if (message.type === "state") return load().then(({ token, ...rest }) => ({ paired: Boolean(token), ...rest }));
    // a tab may only pause or apply, and only the attached one
    if (fromTab) {
      const { tabId } = await load();
      if (sender.tab.id !== tabId || !["pause", "apply", "open_review"].includes(message.type)) {
        return { error: "this tab is not attached" };
      }
    }
    const handler = handlers[message.type];
    return handler ? handler(message) : { error: `unknown message ${message.type}` };
  };
  run().then(reply, (error) => reply({ error: String(error && error.message) }));
  return true;
});

// The attached tab reloaded or navigated: its content script is gone; put it back.
chrome.tabs.onUpdated.addListener(async (tabId, change) => {
  if (change.status !== "complete") return;
  const { tabId: attached, token } = await load();
  if (tabId !== attached || !token) return;
  try {
    await inject(tabId);
  } catch (error) {
    await setStatus(`cannot reach the attached tab after it loaded: ${error.message}`, "error");
    return;
  }
  // A prompt that could not go in before the reload gets another try in the fresh page.
  await save({ blocked: null });
  poll();
});

chrome.tabs.onRemoved.addListener(async (tabId) => {
  const { tabId: attached } = await load();
  if (tabId === attached) await save({ tabId: null, status: { text: "the attached tab was closed", level: "error" } });
});

chrome.runtime.onStartup.addListener(() => poll());
poll();
