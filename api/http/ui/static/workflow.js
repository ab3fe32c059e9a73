// The workflow page follows its events over server-sent events and re-renders its stages: no reload.
// The stream starts after the events the page was rendered with (?since=N); a reconnecting EventSource sends the
// last event id it saw (Last-Event-ID), and the server resumes after it, so every event arrives once.
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
      .then((html) => { live.innerHTML = html; window.rovingTimes(live); })
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
    const time = document.createElement("time");
    time.setAttribute("datetime", row.time);
    time.textContent = row.time;
    [time, row.type, row.stage || "", row.message].forEach((cell) => {
      const td = document.createElement("td");
      if (typeof cell === "string") td.textContent = cell;  // text, never markup: event messages are user data
      else td.appendChild(cell);
      tr.appendChild(td);
    });
    table.tBodies[0].appendChild(tr);
    window.rovingTimes(tr);
  };
  const source = new EventSource(live.dataset.follow);
  source.addEventListener("activity", (message) => {
    addEvent(JSON.parse(message.data));
    refresh();
  });
  source.addEventListener("end", () => {
    source.close();
    refresh();
    if (state) state.textContent = "(ended)";
  });
  source.onerror = () => { if (state && source.readyState !== EventSource.CLOSED) state.textContent = "(reconnecting…)"; };
  source.onopen = () => { if (state) state.textContent = "(live)"; };
});
