// An answer read from the chat's rendered page, as the page shows code (docs/protocol.md,
// "Answers read from a rendered page"). A chat renders the model's markdown: outside code blocks
// the text has lost characters (__init__.py shows as a bold init.py, a "# comment" line as a
// heading), inside a code block (<pre>) it is exactly what the model wrote. So each code block
// is taken verbatim (its <code>, without the language label, the Copy button or a line-number
// gutter beside it) and put between fence lines, and the prose around it is taken as lines.
// The relay is told the answer was read this way (rendered: true), and the session refuses the
// commands that stood outside a code block and would change files or run.
// sources/pagetext.py reads a copied selection's HTML by the same rules.
"use strict";

(() => {
  if (globalThis.codingagentPageText) return;

  const BLOCK =
    /^(ADDRESS|ARTICLE|ASIDE|BLOCKQUOTE|CAPTION|DD|DETAILS|DIALOG|DIV|DL|DT|FIELDSET|FIGCAPTION|FIGURE|FOOTER|FORM|H[1-6]|HEADER|HGROUP|HR|LI|MAIN|NAV|OL|P|SECTION|SUMMARY|TABLE|TBODY|TD|TFOOT|TH|THEAD|TR|UL)$/;
  const SKIPPED =
    /^(BUTTON|SCRIPT|STYLE|SVG|TEMPLATE|NOSCRIPT|SELECT|TEXTAREA|INPUT|CODINGAGENT-APPLY|CODINGAGENT-RELAY)$/i;
  // Line-number gutters, by the class names highlighters give them.
  const GUTTER = /line-?numbers?|linenumber|lineno|gutter|hljs-ln-n/i;
  // A line that would open a code block (CommonMark's fence): prose must never look like one.
  const FENCE = /^ {0,3}(`{3,}(?!.*`)|~{3,})/;

  function skipped(el) {
    if (SKIPPED.test(el.tagName) || el.hidden || el.getAttribute("aria-hidden") === "true") return true;
    const code = el.tagName === "PRE" || el.tagName === "CODE";
    if (!code && GUTTER.test(el.getAttribute("class") || "")) return true;
    if (!el.isConnected) return false;
    const style = getComputedStyle(el);
    return style.display === "none" || style.visibility === "hidden" || (!code && style.userSelect === "none");
  }

  function fenced(code) {
    const longest = Math.max(0, ...(code.match(/`+/g) || []).map((run) => run.length));
    const fence = "`".repeat(Math.max(3, longest + 1));
    return `${fence}\n${code}\n${fence}`;
  }

  function proseLines(text) {
    const kept = [];
    for (const raw of text.split("\n")) {
      const line = raw.replace(/[ \t\f\v\u00a0]+/g, " ").trim();
      if (line || (kept.length && kept[kept.length - 1])) kept.push(FENCE.test(line) ? `    ${line}` : line);
    }
    return kept.join("\n").replace(/^\n+|\n+$/g, "");
  }

  // The text of the part of `node` inside `range` (all of it without a range).
  function clipped(node, range) {
    let text = node.nodeValue;
    if (!range) return text;
    if (node === range.endContainer) text = text.slice(0, range.endOffset);
    if (node === range.startContainer) text = text.slice(range.startOffset);
    return text;
  }

  function children(node) {
    return node.shadowRoot ? [...node.shadowRoot.childNodes, ...node.childNodes] : [...node.childNodes];
  }

  // The parts of the page under `root` (within `range`): [{code: true|false, text}].
  function read(root, range) {
    const parts = [];
    let prose = [];
    const flush = () => {
      const text = prose.join("");
      prose = [];
      if (text.trim()) parts.push({ code: false, text });
    };
    const inRange = (node) => !range || range.intersectsNode(node);

    function codeBlock(pre) {
      const pieces = []; // [inCode, text]
      const lineBreak = (inCode) => {
        if (pieces.length && !pieces[pieces.length - 1][1].endsWith("\n")) pieces.push([inCode, "\n"]);
      };
      const walk = (node, inCode) => {
        if (!inRange(node)) return;
        if (node.nodeType === Node.TEXT_NODE) return void pieces.push([inCode, clipped(node, range)]);
        if (node.nodeType !== Node.ELEMENT_NODE || skipped(node)) return;
        if (node.tagName === "BR") return void pieces.push([inCode, "\n"]);
        const code = inCode || node.tagName === "CODE";
        const block = BLOCK.test(node.tagName) || /^(block|flex|grid|list-item|table)/.test(getComputedStyle(node).display);
        if (block) lineBreak(code);
        for (const child of children(node)) walk(child, code);
        if (block) lineBreak(code);
      };
      for (const child of children(pre)) walk(child, false);
      // Its <code> when it has one (a header with the language and a Copy button may sit
      // beside it), with the line breaks between several <code>.
      const first = pieces.findIndex(([inCode]) => inCode);
      const kept =
        first < 0 ? pieces : pieces.filter(([inCode, t], i) => inCode || (i > first && !t.trim() && t.includes("\n")));
      const text = kept.map(([, t]) => t).join("").replace(/\n$/, "");
      // The block as the browser draws it (its <code>'s innerText, or the <pre>'s) has as many
      // lines, each ending with ours (a gutter's number or a glued label may stand before it):
      // else the lines were not read as drawn (a highlighter's lines without breaks, a gutter
      // in table cells), and the block is prose, so what it holds is refused. No-break spaces
      // count as spaces. A selection ending inside the block compares its lines only.
      const codes = pre.querySelectorAll("code");
      const drawnIn = codes.length === 1 ? codes[0] : pre;
      const nbsp = (s) => s.replace(/\u00a0/g, " ");
      const seen = nbsp(drawnIn.innerText || "").replace(/\n$/, "").split("\n");
      const ours = nbsp(text).split("\n");
      const offset = range ? seen.findIndex((line) => line.endsWith(ours[0])) : seen.length - ours.length;
      const exact =
        offset >= 0 &&
        (range ? offset + ours.length <= seen.length : offset === 0) &&
        ours.every((line, i) => (range && i === ours.length - 1 ? seen[offset + i].includes(line) : seen[offset + i].endsWith(line)));
      if (exact) parts.push({ code: true, text });
      else parts.push({ code: false, text });
    }

    const walk = (node) => {
      if (!inRange(node)) return;
      if (node.nodeType === Node.TEXT_NODE) return void prose.push(clipped(node, range));
      if (node.nodeType !== Node.ELEMENT_NODE && node.nodeType !== Node.DOCUMENT_FRAGMENT_NODE) return;
      if (node.nodeType === Node.ELEMENT_NODE) {
        if (skipped(node)) return;
        if (node.tagName === "BR") return void prose.push("\n");
        if (node.tagName === "PRE") {
          flush();
          return void codeBlock(node);
        }
      }
      const block = node.nodeType === Node.ELEMENT_NODE && BLOCK.test(node.tagName);
      if (block) prose.push("\n");
      for (const child of children(node)) walk(child);
      if (block) prose.push("\n");
    };
    walk(root);
    flush();
    return parts;
  }

  function text(parts) {
    const out = parts.map((part) => (part.code ? fenced(part.text) : proseLines(part.text)));
    return `${out.filter(Boolean).join("\n")}\n`;
  }

  globalThis.codingagentPageText = {
    // An answer element's text: code blocks verbatim between fences, prose as lines.
    fromElement(element) {
      return text(read(element));
    },
    // The selected text, read the same way; a selection inside one code block is that block.
    fromSelection(selection) {
      const pieces = [];
      for (let i = 0; i < selection.rangeCount; i += 1) {
        const range = selection.getRangeAt(i);
        let root = range.commonAncestorContainer;
        if (root.nodeType !== Node.ELEMENT_NODE) root = root.parentElement;
        const pre = root && root.closest("pre");
        pieces.push(...read(pre || root, range));
      }
      return text(pieces);
    },
    fenced,
  };
})();
