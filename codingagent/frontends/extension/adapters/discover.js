// Answers on a chat page no adapter knows, found by what the page does rather than by its
// markup (docs/relay.md, "Answers on a page no adapter knows"). When the content script sends
// a prompt it first marks every element the page has (open shadow roots included, as
// web-component chats build them). The answer is then the new element that kept growing and
// holds the most text (the one with the most text where none grew); never the composer, the
// echo of the prompt (an element whose text is a piece of the prompt), an earlier message the
// page drew again (its text was on the page already), a button, or one of the extension's own
// elements. A web component counts as the text its shadow root draws. content.js treats it as
// an adapter's answer: finished once it has not changed for a second and no Stop button shows
// (here too, found through shadow roots), then Apply goes under it.
// It reads no text for anyone: only lengths and comparisons, inside the tab.
"use strict";
(() => {
  if (globalThis.codingagentDiscover) return;

  const SKIP =
    /^(BUTTON|INPUT|TEXTAREA|SELECT|OPTION|STYLE|SCRIPT|NOSCRIPT|TEMPLATE|SVG|CODINGAGENT-RELAY|CODINGAGENT-APPLY)$/i;
  const squeeze = (s) => s.replace(/\s+/g, "");
  let before = null; // the elements the page had when the prompt was sent
  let prompt = ""; // the prompt, squeezed: its echo on the page is not the answer
  let start = ""; // its first characters
  let earlier = ""; // the page's text then, squeezed: a message drawn again is not the answer
  let first = new WeakMap(); // a new element -> its text when it came (has it grown since?)
  let watcher = null; // notes each element as the page adds it, with its text then
  let marked = null; // the prompt's id
  let last = { el: null, text: "", at: 0 }; // the answer found, its text, when that changed

  // An element's children, its open shadow root's first (what is drawn).
  function kids(node) {
    const list = node.shadowRoot ? [...node.shadowRoot.children] : [];
    return list.concat([...node.children]);
  }

  function skipped(el) {
    return SKIP.test(el.tagName) || el.isContentEditable || el.getAttribute("role") === "button";
  }

  // The text drawn inside an element, through open shadow roots, buttons left out.
  function textOf(node) {
    let out = "";
    const walk = (n) => {
      const nodes = n.shadowRoot ? [...n.shadowRoot.childNodes, ...n.childNodes] : n.childNodes;
      for (const c of nodes) {
        if (c.nodeType === Node.TEXT_NODE) out += c.nodeValue;
        else if (c.nodeType === Node.ELEMENT_NODE && !skipped(c)) walk(c);
      }
    };
    walk(node);
    return out;
  }

  // Every element matching `selector` in the document and in every open shadow root.
  function deepAll(selector, root = document) {
    const found = [...root.querySelectorAll(selector)];
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) found.push(...deepAll(selector, el.shadowRoot));
    }
    return found;
  }

  // The element that has the focus, inside shadow roots too.
  function focused() {
    let el = document.activeElement;
    while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
    return el;
  }

  function visible(el) {
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== "hidden";
  }

  // A Stop button shows (a chat that is still writing), in the page or in a shadow root.
  function stopShown() {
    return deepAll('button, [role="button"]').some((b) => {
      const label = [b.getAttribute("aria-label"), b.title, b.textContent].filter(Boolean).join(" ");
      return /^\s*stop\b/i.test(label) && visible(b);
    });
  }

  // Called just before the prompt is sent: what is on the page now is not the answer.
  function mark(text, promptId) {
    const all = deepAll("*");
    before = new WeakSet(all);
    earlier = document.body ? squeeze(textOf(document.body)) : "";
    marked = promptId;
    first = new WeakMap();
    if (watcher) watcher.disconnect();
    watcher = new MutationObserver((records) => {
      for (const record of records) {
        for (const node of record.addedNodes) {
          if (node.nodeType === Node.ELEMENT_NODE && !first.has(node)) {
            first.set(node, squeeze(textOf(node)));
          }
        }
      }
    });
    const roots = [document.body, ...all.filter((el) => el.shadowRoot).map((el) => el.shadowRoot)];
    for (const root of roots) if (root) watcher.observe(root, { childList: true, subtree: true });
    prompt = squeeze(text);
    start = prompt.slice(0, 60);
  }

  // The new elements that hold text, outermost first; an element holding the prompt's echo
  // and more is looked into, the echo itself is left out.
  function candidates(node, out) {
    for (const el of kids(node)) {
      if (skipped(el)) continue;
      if (!before.has(el)) {
        const flat = squeeze(textOf(el));
        if (!flat) continue;
        if (!flat.includes(start)) {
          const echo = prompt.includes(flat) && flat.length >= 12;
          const seen = flat.length >= 40 && earlier.includes(flat); // an old message drawn anew
          if (!first.has(el)) first.set(el, flat); // added where no observer saw it
          if (!echo && !seen) out.push({ el, size: flat.length, grown: first.get(el) !== flat });
          continue;
        }
        if (prompt.includes(flat)) continue; // the echo
      }
      candidates(el, out);
    }
    return out;
  }

  // The answer to the prompt last sent: of the new elements whose text grew since they
  // appeared (a streamed answer; an echo or a message drawn again appears whole), the one with
  // the most text; where none grew (a chat that shows its answer at once), the new element
  // with the most text. Null before any.
  function answer() {
    if (!before || !document.body) return null;
    const found = candidates(document.body, []);
    if (!found.length) return null;
    const grown = found.filter((c) => c.grown);
    const best = (grown.length ? grown : found).reduce((a, b) => (b.size > a.size ? b : a)).el;
    // A change inside a shadow root is not seen by an observer of its host: compared here.
    const text = textOf(best);
    if (best !== last.el || text !== last.text) last = { el: best, text, at: Date.now() };
    return best;
  }

  // The tab was detached: nothing is watched any more.
  function stop() {
    if (watcher) watcher.disconnect();
    watcher = before = null;
  }

  const promptId = () => marked;
  const changedAt = () => last.at;
  globalThis.codingagentDiscover = {
    mark,
    stop,
    promptId,
    answer,
    changedAt,
    stopShown,
    deepAll,
    focused,
  };
})();
