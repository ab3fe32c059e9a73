// Stage logs: search shows only matching lines; follow re-reads the log every two seconds.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const pre = document.getElementById("log");
  const search = document.getElementById("log-search");
  const follow = document.getElementById("log-follow");
  if (!pre || !search) return;
  let full = pre.textContent;
  const show = () => {
    const needle = search.value.toLowerCase();
    pre.textContent = needle ? full.split("\n").filter((l) => l.toLowerCase().includes(needle)).join("\n") : full;
  };
  search.addEventListener("input", show);
  document.getElementById("log-tools").addEventListener("submit", (e) => e.preventDefault());
  let timer = null;
  follow.addEventListener("change", () => {
    clearInterval(timer);
    if (!follow.checked) return;
    timer = setInterval(() => {
      fetch(follow.dataset.source, { credentials: "same-origin" })
        .then((a) => (a.ok ? a.text() : Promise.reject(a.status)))
        .then((text) => { full = text; show(); pre.scrollTop = pre.scrollHeight; })
        .catch(() => {});
    }, 2000);
  });
});
