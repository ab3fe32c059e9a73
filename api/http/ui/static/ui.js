// Roving UI: small progressive touches; every page works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // a select in a GET filter form applies itself
  document.querySelectorAll("form.filters select").forEach((select) => {
    select.addEventListener("change", () => select.form.submit());
  });
  // a destructive form asks first (without this script it simply posts); delegated, so a form a live page
  // re-renders (the workflow page's Stop) asks too
  document.addEventListener("submit", (event) => {
    const form = event.target.closest("form[data-confirm]");
    if (form && !window.confirm(form.dataset.confirm)) event.preventDefault();
  });
  window.rovingTimes(document);
});
// One time format everywhere, in the reader's own zone: 2026-12-05 14:03:09 (UTC in the tooltip). Pages call it
// again on what they re-render (workflow.js), so a refreshed part never switches format.
window.rovingTime = (when) => {
  const two = (n) => String(n).padStart(2, "0");
  return `${when.getFullYear()}-${two(when.getMonth() + 1)}-${two(when.getDate())} ` +
    `${two(when.getHours())}:${two(when.getMinutes())}:${two(when.getSeconds())}`;
};
window.rovingTimes = (root) => {
  root.querySelectorAll("time[datetime]:not([data-local])").forEach((el) => {
    const when = new Date(el.getAttribute("datetime"));
    if (isNaN(when)) return;
    el.title = when.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") + " (UTC)";
    el.textContent = window.rovingTime(when);
    el.dataset.local = "1";
  });
};
