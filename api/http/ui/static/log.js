// Stage logs: search marks every match in place (Enter goes to the next one), or shows only the lines that
// match; follow re-reads the log every two seconds. Log text is user data: it is only ever set as text.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const pre = document.getElementById("log");
  const search = document.getElementById("log-search");
  const only = document.getElementById("log-only");
  const follow = document.getElementById("log-follow");
  const count = document.getElementById("log-count");
  if (!pre || !search) return;
  let full = pre.textContent;
  let current = -1;
  const marked = (text, needle) => {
    const out = document.createDocumentFragment();
    const lower = text.toLowerCase();
    let from = 0;
    for (let at = lower.indexOf(needle); at !== -1; at = lower.indexOf(needle, from)) {
      out.appendChild(document.createTextNode(text.slice(from, at)));
      const mark = document.createElement("mark");
      mark.textContent = text.slice(at, at + needle.length);
      out.appendChild(mark);
      from = at + needle.length;
    }
    out.appendChild(document.createTextNode(text.slice(from)));
    return out;
  };
  const show = () => {
    const needle = search.value.toLowerCase();
    current = -1;
    if (!needle) { pre.textContent = full; count.textContent = ""; return; }
    const text = only.checked ? full.split("\n").filter((l) => l.toLowerCase().includes(needle)).join("\n") : full;
    pre.replaceChildren(marked(text, needle));
    const found = pre.querySelectorAll("mark").length;
    count.textContent = found === 1 ? "1 match" : `${found} matches`;
  };
  const next = () => {
    const marks = pre.querySelectorAll("mark");
    if (!marks.length) return;
    if (current >= 0 && marks[current]) marks[current].classList.remove("current");
    current = (current + 1) % marks.length;
    marks[current].classList.add("current");
    marks[current].scrollIntoView({ block: "center" });
  };
  search.addEventListener("input", show);
  only.addEventListener("change", show);
  document.getElementById("log-tools").addEventListener("submit", (e) => { e.preventDefault(); next(); });
  let timer = null;
  follow.addEventListener("change", () => {
    clearInterval(timer);
    if (!follow.checked) return;
    timer = setInterval(() => {
      fetch(follow.dataset.source, { credentials: "same-origin" })
        .then((a) => (a.ok ? a.text() : Promise.reject(a.status)))
        .then((text) => { if (text !== full) { full = text; show(); pre.scrollTop = pre.scrollHeight; } })
        .catch(() => {});
    }, 2000);
  });
});
