// Stage logs: the page opens on the log's last part ("load earlier" prepends the part before it); search marks
// every match in place (Enter goes to the next one), or shows only the lines that match; follow asks every two
// seconds for the bytes after those it has, never the whole log again. Log text is user data: only ever set as text.
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
  const source = follow.dataset.source;
  const EARLIER = 256 * 1024;
  let start = Number(pre.dataset.start) || 0;  // byte offsets of what the page holds: [start, end)
  let end = Number(pre.dataset.total) || 0;
  const decoder = new TextDecoder();  // streaming: a character cut between two reads stays whole
  const bytesOf = (url) => fetch(url, { credentials: "same-origin" })
    .then((a) => (a.ok ? a.arrayBuffer() : Promise.reject(a.status)));
  const earlier = document.getElementById("log-earlier");
  if (earlier) {
    earlier.addEventListener("click", () => {
      const from = Math.max(0, start - EARLIER);
      bytesOf(`${source}?offset=${from}&limit=${start - from}`).then((buffer) => {
        full = new TextDecoder().decode(buffer) + full;
        start = from;
        show();
        if (start === 0) document.getElementById("log-earlier-row").hidden = true;
        else document.getElementById("log-shown").textContent = `showing the last ${(end - start).toLocaleString()} of ${end.toLocaleString()} bytes`;
      }).catch(() => {});
    });
  }
  let timer = null;
  let asking = false;
  follow.addEventListener("change", () => {
    clearInterval(timer);
    if (!follow.checked) return;
    timer = setInterval(() => {
      if (asking) return;
      asking = true;
      bytesOf(`${source}?offset=${end}`)
        .then((buffer) => {
          if (!buffer.byteLength) return;
          end += buffer.byteLength;
          full += decoder.decode(buffer, { stream: true });
          show();
          pre.scrollTop = pre.scrollHeight;
        })
        .catch(() => {})
        .finally(() => { asking = false; });
    }, 2000);
  });
});
