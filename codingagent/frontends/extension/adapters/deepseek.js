// DeepSeek (chat.deepseek.com). Public markup facts: the composer is textarea#chat-input; the
// send control is a div[role="button"] next to it that carries aria-disabled="true" until the
// composer holds text (its classes are generated, so it is found by its place); an answer's
// text is a .ds-markdown block; the copy icon has no stable name, so Apply reads the text.
"use strict";
globalThis.codingagentAdapters.register({
  id: "deepseek",
  name: "DeepSeek",
  hosts: ["chat.deepseek.com"],
  composer: ["textarea#chat-input"],
  send: [],
  // The last role=button control around the composer (attach, search, think, send: send last).
  findSend(composer) {
    let scope = composer.parentElement;
    for (let depth = 0; scope && depth < 5; depth += 1, scope = scope.parentElement) {
      const buttons = scope.querySelectorAll("div[role='button'], button");
      if (buttons.length) return buttons[buttons.length - 1];
    }
    return null;
  },
  stop: ["div[role='button'][aria-label='Stop']", ".ds-markdown--streaming"],
  answers: [".ds-markdown"],
  turn: [".ds-message", "div"],
  copy: [],
});
