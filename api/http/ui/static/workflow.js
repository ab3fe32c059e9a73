// The workflow page follows its events over server-sent events and re-renders its stages: no reload.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const live = document.getElementById("live");
  const state = document.getElementById("live-state");
  if (!live || !window.EventSource) return;
  let refreshing = null;
  const refresh = () => {
    if (refreshing) return refreshing;
    refreshing = fetch(live.dataset.fragment, { credentials: "same-origin" })
      .then((answer) => (answer.ok ? answer.text() : Promise.reject(answer.status)))
      .then((html) => { live.innerHTML = html; })
      .catch(() => {})
      .finally(() => { refreshing = null; });
    return refreshing;
  };
  const addEvent = (row) => {
    let table = document.getElementById("events");
    if (table && table.tagName !== "TABLE") {
      const fresh = document.createElement("table");
      fresh.id = "events";
      fresh.innerHTML = "<thead><tr><th>Time</th><th>Event</th><th>Stage</th><th>Message</th></tr></thead><tbody></tbody>";
      table.replaceWith(fresh);
      table = fresh;
    }
    const tr = document.createElement("tr");
    [new Date(row.time).toLocaleString(), row.type, row.stage || "", row.message].forEach((text) => {
      const td = document.createElement("td");
      td.textContent = text;  // text, never markup: event messages are user data
      tr.appendChild(td);
    });
    table.tBodies[0].appendChild(tr);
  };
  // the stream starts from the first event on every (re)connection: rows already shown are skipped
  let shown = document.querySelectorAll("#events tbody tr").length;
  let received = 0;
  const source = new EventSource(live.dataset.follow);
  source.addEventListener("activity", (message) => {
    received += 1;
    if (received <= shown) return;
    shown = received;
    addEvent(JSON.parse(message.data));
    refresh();
  });
  source.addEventListener("end", () => {
    source.close();
    refresh();
    if (state) state.textContent = "(ended)";
  });
  source.onerror = () => { if (state) state.textContent = "(reconnecting…)"; };
  source.onopen = () => { received = 0; if (state) state.textContent = "(live)"; };
});
