// The popup: pair with the relay (its address and the code the terminal printed), then attach
// the current tab to the session. It sends everything to the service worker (background.js).
"use strict";

const $ = (id) => document.getElementById(id);
const ask = (message) => chrome.runtime.sendMessage(message);

function say(text, level = "") {
  $("status").textContent = text;
  $("status").className = level;
}

async function render() {
  const state = await ask({ type: "state" });
  if (state.relay) $("relay").value = state.relay;
  $("pairing").hidden = state.paired;
  $("paired").hidden = !state.paired;
  if (state.paired) {
    $("session").textContent = state.session;
    $("session2").textContent = state.session;
    $("task").textContent = state.task || "";
    $("attached").textContent = state.tabId != null ? "A tab is attached; attaching this one replaces it." : "";
  }
  if (state.status && state.status.text) say(state.status.text, state.status.level === "error" ? "error" : "");
}

$("pair").addEventListener("click", async () => {
  say("pairing…");
  const result = await ask({ type: "pair", relayUrl: $("relay").value, code: $("code").value });
  if (result.error) return say(result.error, "error");
  $("code").value = "";
  await render();
  say(`paired with session ${result.session}`, "ok");
});

$("attach").addEventListener("click", async () => {
  // The active tab of this window: the chat the user opened the popup on. (activeTab grants
  // the extension that tab for this click, for a chat that is not in the manifest's list.)
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  if (!tab) return say("no active tab", "error");
  const result = await ask({ type: "attach", tabId: tab.id });
  if (result.error) return say(result.error, "error");
  say(`this tab now takes session ${result.session}'s prompts`, "ok");
  await render();
});

$("detach").addEventListener("click", async () => {
  await ask({ type: "detach" });
  await render();
});

$("unpair").addEventListener("click", async () => {
  await ask({ type: "unpair" });
  await render();
  say("unpaired");
});

chrome.storage.onChanged.addListener(() => render());
render();
