// ChatGPT (chatgpt.com). Public markup facts, checked against tests/chat_fixtures/chatgpt.html
// (see docs/relay.md for the date): the composer is a ProseMirror editor, div#prompt-textarea
// (a textarea in older versions); the send button is data-testid="send-button", replaced by
// data-testid="stop-button" while an answer streams; an answer is an element with
// data-message-author-role="assistant" inside a conversation turn (article), whose action bar
// has a data-testid="copy-turn-action-button".
"use strict";
globalThis.codingagentAdapters.register({
  id: "chatgpt",
  name: "ChatGPT",
  hosts: ["chatgpt.com", "chat.openai.com"],
  composer: ["div#prompt-textarea[contenteditable='true']", "textarea#prompt-textarea"],
  send: ["button[data-testid='send-button']", "button[aria-label='Send prompt']"],
  stop: ["button[data-testid='stop-button']", "button[aria-label='Stop streaming']"],
  answers: ["[data-message-author-role='assistant']"],
  turn: ["article[data-testid^='conversation-turn']", "article"],
  copy: ["button[data-testid='copy-turn-action-button']", "button[aria-label='Copy']"],
  attachments: ["[data-testid='attachment']", "div[class*='file-tile']"],
});
