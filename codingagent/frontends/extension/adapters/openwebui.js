// Open WebUI (self-hosted, any address: found by its markup). Public markup facts: the
// composer is #chat-input (a textarea in older versions, a contenteditable tiptap/ProseMirror
// editor in newer ones) inside #chat-input-container; the send button is #send-message-button;
// messages live in #messages-container, an answer's text in #response-content-container; its
// Copy button has class copy-response-button; a "Stop" button (aria-label) shows while the
// model writes.
"use strict";
globalThis.codingagentAdapters.register({
  id: "openwebui",
  name: "Open WebUI",
  hosts: [],
  detect: () =>
    Boolean(document.querySelector("#chat-input") && document.querySelector("#messages-container")),
  composer: ["#chat-input[contenteditable='true']", "textarea#chat-input"],
  send: ["#send-message-button"],
  stop: ["button[aria-label='Stop']", "#stop-response-button"],
  answers: ["#response-content-container"],
  turn: [".chat-assistant", "[id^='message-']"],
  copy: ["button.copy-response-button", "button[aria-label='Copy']"],
});
