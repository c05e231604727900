// The page's review of a reply's held file changes (docs/review.md): a diff per file with a
// checkbox per hunk, a note, Accept (the checked hunks; the rest is rejected) and Reject (all).
// Uses app.js's helpers ($, el, api, act, refresh, notice). Text from the LLM and the workspace
// is only ever set as textContent.
"use strict";

let reviewShown = null; // the id of the review on screen: the same review keeps its checkboxes

function renderReview(review) {
  const box = $("review");
  box.hidden = !review;
  if (!review) {
    reviewShown = null;
    return;
  }
  if (reviewShown === review.id) return;
  const first = reviewShown === null;
  reviewShown = review.id;
  $("review-summary").textContent =
    `The reply ${review.source} to prompt ${review.sequence} changes ${review.summary}. ` +
    "Nothing is written, and nothing runs, until you decide.";
  const files = $("review-files");
  files.replaceChildren();
  for (const file of review.files) files.append(reviewFile(file));
  $("review-failed").hidden = !review.failed.length;
  $("review-failed").textContent = review.failed.length
    ? `Fail whatever you decide: ${review.failed.join("\n")}` : "";
  $("review-note").value = "";
  if (first) box.scrollIntoView({ block: "start" });
}

function reviewFile(file) {
  const block = el("details", "diff review-file");
  block.open = true;
  block.dataset.file = file.number;
  const title = el("summary");
  const all = el("input");
  all.type = "checkbox";
  all.checked = true;
  all.className = "file-check";
  all.title = "Accept or reject all of this file";
  all.setAttribute("aria-label", `Accept ${file.path}`);
  const kind = { created: "new file", deleted: "deleted" }[file.change] || "changed";
  title.append(all, " ", el("strong", "", file.number), " ", el("code", "", file.path),
    el("span", "dim", ` ${kind} · ${plural(file.hunks.length, "hunk")}`));
  block.append(title);
  const checks = [];
  for (const hunk of file.hunks) {
    const row = el("div", "hunk-row");
    row.dataset.hunk = hunk.number;
    const check = el("input");
    check.type = "checkbox";
    check.checked = true;
    check.className = "hunk-check";
    check.value = hunk.number;
    check.setAttribute("aria-label", `Accept hunk ${hunk.number}`);
    checks.push(check);
    const label = el("label", "hunk-label");
    label.append(check, ` ${hunk.number} `, el("code", "", hunk.header));
    row.append(label);
    const pre = el("pre");
    for (const text of hunk.lines) {
      const mark = text[0];
      const kind = mark === "+" ? "add" : mark === "-" ? "del" : "";
      pre.append(el("span", `line ${kind}`, text));
    }
    if (hunk.lines.length) row.append(pre);
    else row.append(el("p", "dim", "(an empty file)"));
    block.append(row);
  }
  // One box for the file: all its hunks, or none; a hunk's box alone makes it partly.
  all.addEventListener("click", (event) => event.stopPropagation());
  all.addEventListener("change", () => checks.forEach((c) => { c.checked = all.checked; }));
  for (const check of checks) {
    check.addEventListener("change", () => {
      const on = checks.filter((c) => c.checked).length;
      all.checked = on === checks.length;
      all.indeterminate = on > 0 && on < checks.length;
    });
  }
  return block;
}

async function decideReview(accept, discard = false) {
  const note = $("review-note").value;
  const done = await api(`api/sessions/${current}/review`, { accept, note, discard });
  reviewShown = null;
  if (done.handed) notice("Decided: the agent applies it now.");
  else if (done.notes && done.notes.length) notice(done.notes.join("\n"));
  await refresh();
}

function checkedHunks() {
  return [...document.querySelectorAll("#review-files .hunk-check")]
    .filter((c) => c.checked).map((c) => c.value);
}

window.addEventListener("DOMContentLoaded", () => {
  $("review-accept").addEventListener("click", () =>
    act($("review-accept"), () => decideReview(checkedHunks())));
  $("review-reject").addEventListener("click", () =>
    act($("review-reject"), () => decideReview([])));
  $("review-discard").addEventListener("click", () =>
    act($("review-discard"), () => decideReview([], true)));
});
