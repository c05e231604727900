// Le Chat (chat.mistral.ai). Public markup facts: the composer is textarea[name="message.text"]
// (newer builds: a contenteditable ProseMirror editor); the send button is aria-label
// "Send question"; an answer carries data-message-author-role="assistant" with its text in a
// .prose block; its action bar has a button labelled "Copy to clipboard".
"use strict";
globalThis.codingagentAdapters.register({
  id: "mistral",
  name: "Le Chat",
  hosts: ["chat.mistral.ai"],
  composer: ["textarea[name='message.text']", "div.ProseMirror[contenteditable='true']"],
  send: ["button[aria-label='Send question']", "button[type='submit']"],
  stop: ["button[aria-label='Stop']", "button[aria-label='Stop generation']"],
  answers: ["[data-message-author-role='assistant']"],
  turn: ["[data-message-author-role='assistant']"],
  copy: ["button[aria-label='Copy to clipboard']", "button[aria-label='Copy']"],
});
