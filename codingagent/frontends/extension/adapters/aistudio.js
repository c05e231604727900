// Google AI Studio (aistudio.google.com). Public markup facts: the composer is a textarea in
// ms-prompt-input-wrapper (aria-label starting "Type something"); the send button is
// button.run-button (aria-label "Run"; it reads "Stop" while the model answers); a turn is an
// ms-chat-turn, the model's ones with .chat-turn-container.model, the text in ms-cmark-node.
// Its copy sits in an options menu, so Apply reads the answer's text.
"use strict";
globalThis.codingagentAdapters.register({
  id: "aistudio",
  name: "AI Studio",
  hosts: ["aistudio.google.com"],
  composer: ["ms-prompt-input-wrapper textarea", "textarea[aria-label^='Type something']"],
  send: ["button.run-button[aria-label='Run']", "button.run-button"],
  stop: ["button.run-button.stoppable", "button.run-button[aria-label='Stop']"],
  answers: ["ms-chat-turn .chat-turn-container.model"],
  turn: ["ms-chat-turn"],
  copy: [],
});
