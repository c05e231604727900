// Any other chat page the user attaches. The composer is the focused editable element, or the
// largest visible one (textarea, contenteditable, text input), in the page or in an open shadow
// root; it is sent by a send/submit button near it, else by Enter. Answers are found by the
// usual markers of a chat's assistant message; where a page has none, by what the page does
// (adapters/discover.js); the status pill's "Apply selection" sends the text the user selected.
"use strict";
(() => {
  const A = globalThis.codingagentAdapters;
  const EDITABLE = "textarea, [contenteditable='true'], [contenteditable=''], input[type='text']";
  A.register({
    id: "generic",
    name: "This page",
    hosts: [],
    findComposer() {
      // in the page or in an open shadow root (a chat built of web components)
      const D = globalThis.codingagentDiscover;
      const focused = D.focused();
      if (focused && focused.matches && focused.matches(EDITABLE) && A.visible(focused)) {
        return focused;
      }
      let best = null;
      let bestArea = 0;
      for (const el of D.deepAll(EDITABLE)) {
        if (!A.visible(el) || el.closest("codingagent-relay")) continue;
        const box = el.getBoundingClientRect();
        const area = box.width * box.height;
        if (area > bestArea) {
          best = el;
          bestArea = area;
        }
      }
      return best;
    },
    findSend: (composer) => A.nearbySendButton(composer),
    composer: [],
    send: [],
    stop: ["button[aria-label^='Stop' i]"],
    answers: [
      "[data-message-author-role='assistant']",
      "[data-role='assistant']",
      ".message.assistant",
      ".assistant-message",
      ".bot-message",
    ],
    turn: [],
    copy: ["button[aria-label^='Copy' i]", "button[title^='Copy' i]"],
  });
})();
