// The shared part of the chat adapters (docs/relay.md, "The extension and the chats").
// An adapter is a table of selectors for one chat; this file does the work with them: find the
// composer, put a prompt in it as the site accepts it, send it, list the answers, tell whether
// the chat is still writing one, and find an answer's own Copy button.
// Injected into the attached tab only (never into a tab the user did not attach).
"use strict";

(() => {
  if (globalThis.codingagentAdapters) return;

  const adapters = [];

  function visible(el) {
    if (!el || !el.isConnected) return false;
    const box = el.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) return false;
    const style = getComputedStyle(el);
    return style.visibility !== "hidden" && style.display !== "none";
  }

  function first(selectors, root = document) {
    for (const selector of selectors || []) {
      for (const el of root.querySelectorAll(selector)) {
        if (visible(el)) return el;
      }
    }
    return null;
  }

  function all(selectors, root = document) {
    const found = new Set();
    for (const selector of selectors || []) {
      for (const el of root.querySelectorAll(selector)) found.add(el);
    }
    // Outermost only: an answer selector may match both a message and its inner markdown.
    const list = [...found].filter((el) => ![...found].some((o) => o !== el && o.contains(el)));
    return list.sort((a, b) =>
      a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1,
    );
  }

  function enabled(button) {
    return (
      button &&
      !button.disabled &&
      button.getAttribute("aria-disabled") !== "true" &&
      visible(button)
    );
  }

  function isTextField(el) {
    return el instanceof HTMLTextAreaElement || el instanceof HTMLInputElement;
  }

  function composerText(el) {
    return isTextField(el) ? el.value : el.innerText || "";
  }

  // Whether the composer holds (the start of) the prompt; an editor renders line breaks as
  // paragraphs, so white space is left out of the comparison.
  const squeeze = (s) => s.replace(/\s+/g, "");
  function holds(el, text) {
    return squeeze(composerText(el)).includes(squeeze(text).slice(0, 60));
  }

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  async function until(test, ms, step = 100) {
    const end = Date.now() + ms;
    for (;;) {
      const value = test();
      if (value) return value;
      if (Date.now() >= end) return null;
      await sleep(step);
    }
  }

  // A textarea belongs to a framework (React, Svelte, Angular) that tracks its value: set it
  // through the prototype's setter, so the framework sees a change, then say so with an input
  // event.
  function fillTextField(el, text) {
    const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement : HTMLInputElement;
    const setter = Object.getOwnPropertyDescriptor(proto.prototype, "value").set;
    el.focus();
    setter.call(el, text);
    el.dispatchEvent(new InputEvent("input", { bubbles: true, inputType: "insertFromPaste" }));
    el.dispatchEvent(new Event("change", { bubbles: true }));
  }

  function selectAllIn(el) {
    el.focus();
    const range = document.createRange();
    range.selectNodeContents(el);
    const selection = getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  // A paste event carrying ``text``. Chromium takes a DataTransfer as clipboardData; Firefox
  // leaves a made-up event's clipboardData empty but fills it from its own dataType and data.
  function pasteEvent(text) {
    const data = new DataTransfer();
    data.setData("text/plain", text);
    const init = { clipboardData: data, bubbles: true, cancelable: true };
    const event = new ClipboardEvent("paste", init);
    if (event.clipboardData && event.clipboardData.getData("text/plain") === text) return event;
    return new ClipboardEvent("paste", { dataType: "text/plain", data: text, bubbles: true, cancelable: true });
  }

  // A rich editor (ProseMirror, Quill, tiptap) keeps its own model of the text and listens to
  // paste and beforeinput, not to the DOM: hand it the prompt as a paste first (one transaction,
  // fast for long prompts; a site may turn a long paste into an attachment, which is fine), and
  // if nothing arrived, as typed text through execCommand("insertText").
  async function fillEditable(el, text, accepted) {
    selectAllIn(el);
    el.dispatchEvent(pasteEvent(text));
    if (await until(accepted, 1500)) return "paste";
    selectAllIn(el);
    document.execCommand("insertText", false, text);
    if (await until(accepted, 1500)) return "insertText";
    return null;
  }

  // Put the prompt into the composer; true when the composer (or an attachment) took it.
  async function insertPrompt(adapter, composer, text) {
    const before = attachmentCount(adapter);
    const accepted = () => holds(composer, text) || attachmentCount(adapter) > before;
    if (isTextField(composer)) {
      fillTextField(composer, text);
      return (await until(accepted, 1000)) ? "value" : null;
    }
    return fillEditable(composer, text, accepted);
  }

  function attachmentCount(adapter) {
    return adapter.attachments ? document.querySelectorAll(adapter.attachments.join(",")).length : 0;
  }

  function pressEnter(el) {
    el.focus();
    for (const type of ["keydown", "keypress", "keyup"]) {
      el.dispatchEvent(
        new KeyboardEvent(type, {
          key: "Enter",
          code: "Enter",
          keyCode: 13,
          which: 13,
          bubbles: true,
          cancelable: true,
        }),
      );
    }
  }

  // The send button of a page we know nothing about: in the composer's form, or near it, a
  // button that says send/submit/run/ask.
  function nearbySendButton(composer) {
    const words = /send|submit|run|ask|go\b/i;
    let scope = composer.closest("form") || composer.parentElement;
    for (let depth = 0; scope && depth < 5; depth += 1, scope = scope.parentElement) {
      const buttons = [...scope.querySelectorAll('button, [role="button"], input[type="submit"]')];
      const named = buttons.find((b) => {
        const label = [b.getAttribute("aria-label"), b.title, b.textContent, b.value]
          .filter(Boolean)
          .join(" ");
        return visible(b) && (b.type === "submit" || words.test(label));
      });
      if (named) return named;
    }
    return null;
  }

  globalThis.codingagentAdapters = {
    adapters,
    register(adapter) {
      adapters.push(adapter);
    },
    // The adapter for this page: by host name, then by markup (Open WebUI runs anywhere), then
    // the generic one.
    choose(location) {
      const host = location.hostname;
      const byHost = adapters.find((a) => (a.hosts || []).includes(host));
      if (byHost) return byHost;
      const byMarkup = adapters.find((a) => a.detect && a.detect());
      return byMarkup || adapters.find((a) => a.id === "generic");
    },
    visible,
    first,
    all,
    enabled,
    until,
    sleep,
    composerText,
    holds,
    insertPrompt,
    pressEnter,
    nearbySendButton,
    isTextField,
  };
})();
