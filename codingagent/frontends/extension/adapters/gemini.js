// Gemini (gemini.google.com). Public markup facts: the composer is a Quill editor,
// rich-textarea .ql-editor[contenteditable]; the send button has class send-button and
// aria-label "Send message" (aria-disabled while empty, "Stop response" while answering); an
// answer is a model-response element with its text in message-content; its Copy button has
// data-test-id="copy-button" (aria-label "Copy").
"use strict";
globalThis.codingagentAdapters.register({
  id: "gemini",
  name: "Gemini",
  hosts: ["gemini.google.com"],
  composer: ["rich-textarea .ql-editor[contenteditable='true']", ".ql-editor[contenteditable='true']"],
  send: ["button.send-button[aria-label='Send message']", "button[aria-label='Send message']"],
  stop: ["button[aria-label='Stop response']", "button.send-button.stop"],
  answers: ["model-response message-content", "model-response"],
  turn: ["model-response", ".conversation-container"],
  copy: ["button[data-test-id='copy-button']", "button[aria-label='Copy']"],
});
