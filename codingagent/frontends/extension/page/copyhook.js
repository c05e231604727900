// Runs in the attached chat page's own JavaScript world (scripting.executeScript, world MAIN),
// because a chat's Copy button writes through the page's navigator.clipboard, which the
// extension's isolated content script cannot see. While the content script has armed it (the
// attribute data-codingagent-copy on <html>, set only during an Apply click), a write of the
// chat's Copy is handed to the content script instead of the clipboard; at any other time the
// page's clipboard works untouched. See docs/relay.md, "What the extension may read".
"use strict";
(() => {
  if (window.__codingagentCopyHook || !navigator.clipboard) return;
  window.__codingagentCopyHook = true;
  const clipboard = navigator.clipboard;
  const armed = () => document.documentElement.getAttribute("data-codingagent-copy");
  const hand = (text) =>
    document.dispatchEvent(
      new CustomEvent("codingagent-copied", { detail: JSON.stringify({ nonce: armed(), text }) }),
    );
  const writeText = clipboard.writeText.bind(clipboard);
  clipboard.writeText = function (text) {
    if (!armed()) return writeText(text);
    hand(String(text));
    return Promise.resolve();
  };
  if (clipboard.write) {
    const write = clipboard.write.bind(clipboard);
    clipboard.write = async function (items) {
      if (!armed()) return write(items);
      for (const item of items) {
        if (item.types.includes("text/plain")) {
          hand(await (await item.getType("text/plain")).text());
          return;
        }
      }
      return write(items);
    };
  }
})();
