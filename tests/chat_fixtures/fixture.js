// The engine of the fixture chat pages (tests/test_extension_chats.py). Each page carries the
// markup of one chat, as public references describe it (never the site's code), and sets
// window.fixture: where its composer, send button and answers are. This file plays the chat:
// its composer keeps its own model of the text, as the real editors do (ProseMirror, Quill and
// React textareas learn the text from paste, beforeinput and input events, not from the DOM),
// the send button is enabled only when that model holds text, a sent prompt is posted to the
// fixture server, and the answer the server scripts streams in over time, with a Stop button
// while it streams and a Copy button (navigator.clipboard.writeText of the answer's markdown)
// once it is done. It counts trusted key presses and clicks, which the tests check.
"use strict";

(() => {
  const F = window.fixture;
  // F.composerElement / F.sendElement: a page whose composer lives in a shadow root
  const composer = F.composerElement ? F.composerElement() : document.querySelector(F.composer);
  const sendButton = () => (F.sendElement ? F.sendElement() : document.querySelector(F.send));
  const log = { trustedKeys: 0, trustedClicks: 0, sent: [], how: [], copies: 0 };
  window.fixtureLog = log;
  let text = "";

  document.addEventListener("keydown", (e) => e.isTrusted && (log.trustedKeys += 1), true);
  document.addEventListener("click", (e) => e.isTrusted && (log.trustedClicks += 1), true);

  const escape = (s) => s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

  function update() {
    const button = sendButton();
    if (!button) return;
    const empty = !text.trim() && !attachment;
    if (F.disable === "aria") button.setAttribute("aria-disabled", String(empty));
    else button.disabled = empty;
  }

  let attachment = null; // a long paste some chats turn into an attached file
  if (composer.isContentEditable) {
    composer.addEventListener("paste", (e) => {
      e.preventDefault();
      const pasted = e.clipboardData.getData("text/plain");
      log.how.push("paste");
      if (F.attachOver && pasted.length > F.attachOver) {
        attachment = pasted;
        const tile = document.createElement("div");
        tile.setAttribute("data-testid", "attachment");
        tile.textContent = `Pasted text (${pasted.length} characters)`;
        composer.parentElement.prepend(tile);
      } else {
        composer.innerHTML = pasted
          .split("\n")
          .map((l) => `<p>${escape(l) || "<br>"}</p>`)
          .join("");
        text = pasted;
      }
      update();
    });
    composer.addEventListener("input", (e) => {
      log.how.push(e.inputType || "input");
      text = composer.innerText;
      update();
    });
  } else {
    composer.addEventListener("input", () => {
      log.how.push("input");
      text = composer.value;
      update();
    });
  }
  if (F.enterSends) {
    composer.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey) {
        e.preventDefault();
        submit();
      }
    });
  }
  document.addEventListener("click", (e) => {
    const button = e.composedPath().find((n) => n instanceof Element && n === sendButton());
    if (!button || button.disabled || button.getAttribute("aria-disabled") === "true") return;
    submit();
  });

  function clearComposer() {
    text = "";
    if (composer.isContentEditable) composer.innerHTML = "<p><br></p>";
    else composer.value = "";
    if (attachment) document.querySelector("[data-testid='attachment']").remove();
    attachment = null;
    update();
  }

  async function submit() {
    const prompt = attachment || text;
    if (!prompt.trim()) return;
    log.sent.push(prompt);
    clearComposer();
    F.userTurn(prompt);
    const response = await fetch("/fixture/sent", { method: "POST", body: prompt });
    stream(await response.text());
  }

  // Markdown the way chats render it: fenced blocks as <pre><code>, the rest as paragraphs
  // whose text keeps its line breaks (soft breaks).
  function render(markdown) {
    const parts = markdown.split(/^```(\w*)\n([\s\S]*?)^```\s*$/m);
    let html = "";
    for (let i = 0; i < parts.length; i += 3) {
      for (const para of parts[i].split(/\n{2,}/)) {
        if (para.trim()) html += `<p>${escape(para.trim())}</p>`;
      }
      if (i + 2 < parts.length) {
        html += `<pre><code class="language-${parts[i + 1] || "text"}">${escape(parts[i + 2])}</code></pre>`;
      }
    }
    return html;
  }

  // ?slow: the answer takes some 5 s instead of 1.2 s (a test watches it stream).
  const pause = new URLSearchParams(location.search).has("slow") ? 600 : 150;

  // F.serverRender: the page is drawn as the big chats draw it (tests/chat_render.py, a real
  // CommonMark renderer on the fixture server), one snapshot a step.
  async function stream(markdown) {
    const turn = F.answerTurn();
    F.streaming(turn, true);
    const steps = 8;
    const drawn = F.serverRender
      ? await (await fetch("/fixture/render", { method: "POST", body: markdown })).json()
      : null;
    let step = 0;
    const timer = setInterval(() => {
      step += 1;
      turn.body.innerHTML = drawn
        ? drawn[step - 1]
        : render(markdown.slice(0, Math.ceil((markdown.length * step) / steps)));
      if (step < steps) return;
      clearInterval(timer);
      F.streaming(turn, false);
      if (turn.actions && F.copyButton) {
        const copy = F.copyButton();
        copy.addEventListener("click", () => {
          log.copies += 1;
          navigator.clipboard.writeText(markdown);
        });
        turn.actions.append(copy);
      }
    }, pause);
  }

  window.fixtureShow = stream; // an answer shown without a prompt (a test copies it by hand)
  clearComposer();
})();
