// Claude (claude.ai). Public markup facts: the composer is a contenteditable ProseMirror
// editor (div.ProseMirror inside an element labelled "Write your prompt to Claude"); the send
// button is aria-label="Send message"; while an answer streams a "Stop response" button shows
// and the answer's wrapper carries data-is-streaming="true"; an answer's text is in
// .font-claude-message (newer: .font-claude-response); its action bar has
// data-testid="action-bar-copy".
"use strict";
globalThis.codingagentAdapters.register({
  id: "claude",
  name: "Claude",
  hosts: ["claude.ai"],
  composer: ["div.ProseMirror[contenteditable='true']", "[contenteditable='true'][role='textbox']"],
  send: ["button[aria-label='Send message']", "button[aria-label='Send Message']"],
  stop: ["button[aria-label='Stop response']", "[data-is-streaming='true']"],
  answers: [".font-claude-message", ".font-claude-response"],
  turn: ["[data-is-streaming]", "[data-test-render-count]"],
  copy: ["button[data-testid='action-bar-copy']", "button[aria-label='Copy']"],
  attachments: ["[data-testid='file-thumbnail']"],
});
